// The node-wide frame budget shared by every ADD and the background
// announcer: one token bucket in stateDir, read and written under a lock.
import { join } from '../path';
import type { Logger } from '../log';
import { readSmallFile, replaceFile } from '../sys/safe-file';
import type { LockFile } from './attachment-lock';
import { firstWaits, takeOnCredit, tryTake, tryTakeLater, type RateLimit, type TokenBucket } from './token-bucket';

/** The bucket's file in stateDir. */
export const BUCKET_FILE = 'rate-limit.bucket';
/** How long one take waits for the bucket's lock. */
const LOCK_WAIT_MS = 200;
/** When another process holds the bucket that long, the caller tries again this much later. */
const BUSY_RETRY_MS = 20;

/** Draws frames from the node's budget. */
export interface FrameBudget {
  /**
   * Takes `frames` tokens now and runs `send` (ok), or says how long to wait,
   * also while other processes keep the bucket busy; `onCredit` takes them
   * whatever is left, unmetered if the bucket stays busy. `send` runs while
   * the bucket is still held, and `clock` (boot ms) is read once the bucket
   * is held: the time the bucket accounts is the time the frames leave, not
   * the time a process that then waited for the lock asked.
   */
  take(
    frames: number,
    clock: () => number,
    onCredit: boolean,
    send: () => void,
  ): Promise<{ ok: true } | { ok: false; waitMs: number }>;
}

/** A budget that never limits (rateLimit off). */
export const UNLIMITED: FrameBudget = {
  take: async (_frames, _now, _onCredit, send) => {
    send();
    return { ok: true };
  },
};

/**
 * The budget `limit` in `<stateDir>/rate-limit.bucket`, shared by the processes of that stateDir; round 1s (`first`,
 * never dropped) go before `later` rounds.
 */
export function sharedFrameBudget(
  stateDir: string,
  limit: RateLimit,
  lockFile: LockFile,
  log: Logger,
  rounds: 'first' | 'later',
): FrameBudget {
  const lockName = join(stateDir, `${BUCKET_FILE}.flock`);
  return {
    async take(frames, clock, onCredit, send) {
      let lock;
      try {
        lock = await lockFile(lockName, LOCK_WAIT_MS);
      } catch (err) {
        log.warn('rate limit unavailable: sending unmetered', { error: err });
        send();
        return { ok: true };
      }
      if (!lock) {
        // Many processes at once (a node starting all its pods), the holder descheduled: wait as for
        // tokens. Sending unmetered here would let exactly such a storm through.
        if (!onCredit) return { ok: false, waitMs: BUSY_RETRY_MS };
        log.warn('rate limit busy: sending unmetered');
        send();
        return { ok: true };
      }
      try {
        let unmetered = false;
        try {
          const now = clock();
          const bucket = readBucket(join(stateDir, BUCKET_FILE));
          const take = rounds === 'first' ? tryTake : tryTakeLater;
          const next = onCredit
            ? { ok: true as const, bucket: takeOnCredit(bucket, limit, frames, now) }
            : take(bucket, limit, frames, now);
          if (!next.ok) {
            if (rounds === 'first')
              replaceFile(stateDir, BUCKET_FILE, JSON.stringify(firstWaits(bucket, limit, now, next.waitMs)));
            return next;
          }
          replaceFile(stateDir, BUCKET_FILE, JSON.stringify(next.bucket));
        } catch (err) {
          log.warn('rate limit state unusable: sending unmetered', { error: err });
          unmetered = true;
        }
        send();
        if (unmetered) log.debug('sent unmetered');
        return { ok: true };
      } finally {
        lock.release();
      }
    },
  };
}

function readBucket(file: string): TokenBucket | undefined {
  const text = readSmallFile(file, 4096);
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<TokenBucket>;
    if (Number.isFinite(value.tokens) && Number.isFinite(value.atMs)) {
      const bucket: TokenBucket = { tokens: value.tokens!, atMs: value.atMs! };
      if (Number.isFinite(value.firstWaitsUntil)) bucket.firstWaitsUntil = value.firstWaitsUntil!;
      return bucket;
    }
  } catch {
    // rewritten below
  }
  return undefined;
}
