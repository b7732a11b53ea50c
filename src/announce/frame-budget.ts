// The node-wide frame budget shared by every ADD and the background
// announcer: one token bucket in stateDir, read and written under a lock.
import { join } from 'node:path';
import type { Logger } from '../log';
import { readSmallFile, replaceFile } from '../sys/safe-file';
import type { LockFile } from './attachment-lock';
import { takeOnCredit, tryTake, type RateLimit, type TokenBucket } from './token-bucket';

/** The bucket's file in stateDir. */
export const BUCKET_FILE = 'rate-limit.bucket';
/** A lock held longer than this by someone else is not waited for: the frames go out unmetered. */
const LOCK_WAIT_MS = 200;

/** Draws frames from the node's budget. */
export interface FrameBudget {
  /** Takes `frames` tokens now (ok), or says how long to wait; `onCredit` takes them whatever is left. */
  take(frames: number, now: number, onCredit?: boolean): Promise<{ ok: true } | { ok: false; waitMs: number }>;
}

/** A budget that never limits (rateLimit off). */
export const UNLIMITED: FrameBudget = { take: async () => ({ ok: true }) };

/** The budget `limit` kept in `<stateDir>/rate-limit.bucket`, shared by every process that uses that stateDir. */
export function sharedFrameBudget(stateDir: string, limit: RateLimit, lockFile: LockFile, log: Logger): FrameBudget {
  const lockName = join(stateDir, `${BUCKET_FILE}.flock`);
  return {
    async take(frames, now, onCredit = false) {
      let lock;
      try {
        lock = await lockFile(lockName, LOCK_WAIT_MS);
      } catch (err) {
        log.warn('rate limit unavailable: sending unmetered', { error: err });
        return { ok: true };
      }
      if (!lock) {
        log.warn('rate limit busy: sending unmetered');
        return { ok: true };
      }
      try {
        const bucket = readBucket(join(stateDir, BUCKET_FILE));
        const next = onCredit ? { ok: true as const, bucket: takeOnCredit(bucket, limit, frames, now) } : tryTake(bucket, limit, frames, now);
        if (!next.ok) return next;
        replaceFile(stateDir, BUCKET_FILE, JSON.stringify(next.bucket));
        return { ok: true };
      } catch (err) {
        log.warn('rate limit state unusable: sending unmetered', { error: err });
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
    if (Number.isFinite(value.tokens) && Number.isFinite(value.atMs)) return { tokens: value.tokens!, atMs: value.atMs! };
  } catch {
    // rewritten below
  }
  return undefined;
}
