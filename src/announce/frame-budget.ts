// The node-wide frame budget, held in the announcer's memory: the announcer
// alone sends frames, so one token bucket in its process meters them all. A
// take never blocks: it sends now or says how long to wait, and the caller
// waits on the loop (a deadline in its poll), having opened nothing.
import { firstWaits, takeOnCredit, tryTake, tryTakeLater, type RateLimit, type TokenBucket } from './token-bucket';

/** The outcome of a take: sent, or held back for `waitMs`. */
export type Taken = { ok: true } | { ok: false; waitMs: number };

/** Draws frames from the node's budget. */
export interface FrameBudget {
  /**
   * Takes `frames` tokens now and runs `send` (ok), or says how long to wait; `onCredit` takes them whatever is left.
   * `clock` (boot ms) is the time the frames leave.
   */
  take(frames: number, clock: () => number, onCredit: boolean, send: () => void): Promise<Taken>;
}

/** A budget that never limits (rateLimit off). */
export const UNLIMITED: FrameBudget = {
  take: async (_frames, _now, _onCredit, send) => {
    send();
    return { ok: true };
  },
};

/** Which rounds draw: round 1s (`first`, never dropped) go before `later` rounds. */
export type Rounds = 'first' | 'later';

/** The announcer's one token bucket; its limit is read at each take (node settings), none meaning unlimited. */
export class NodeFrameBudget {
  private bucket: TokenBucket | undefined;

  constructor(private readonly limit: () => RateLimit | undefined) {}

  /** The budget `rounds` draw from. */
  budget(rounds: Rounds): FrameBudget {
    return { take: async (frames, clock, onCredit, send) => this.take(rounds, frames, clock(), onCredit, send) };
  }

  /** Synchronous: sends, or leaves the bucket as a held-back round 1 finds it. */
  private take(rounds: Rounds, frames: number, now: number, onCredit: boolean, send: () => void): Taken {
    const limit = this.limit();
    if (!limit) {
      send();
      return { ok: true };
    }
    const next = onCredit
      ? { ok: true as const, bucket: takeOnCredit(this.bucket, limit, frames, now) }
      : (rounds === 'first' ? tryTake : tryTakeLater)(this.bucket, limit, frames, now);
    if (!next.ok) {
      if (rounds === 'first') this.bucket = firstWaits(this.bucket, limit, now, next.waitMs);
      return next;
    }
    this.bucket = next.bucket;
    send();
    return { ok: true };
  }
}
