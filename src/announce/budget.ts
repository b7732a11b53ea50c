// The node-wide frame budget: a token bucket in the announcer's memory (the announcer alone sends frames, so one
// bucket in its process meters them all). Switches police ARP per port (Cisco DAI: 15 packets/s by default, then the
// port is error-disabled), so every frame the node sends draws from it. A take never blocks: it takes the frames now
// or says how long to wait, and the caller waits on the loop (a deadline in its poll), having opened nothing. The
// bucket's arithmetic is pure.

/** The outcome of a take: taken (send them now), or held back for `waitMs`. */
export type Taken = { ok: true } | { ok: false; waitMs: number };

/** Draws frames from the node's budget. */
export interface FrameBudget {
  /** Takes `frames` tokens at `now` (boot ms), or says how long to wait; `onCredit` takes them whatever is left. */
  take(frames: number, now: number, onCredit?: boolean): Taken;
}

/** The node's budget: round 1s (`first`, never dropped) go before `later` rounds. */
export interface NodeBudget {
  first: FrameBudget;
  later: FrameBudget;
}

/** The announcer's one token bucket; its limit is read at each take (node settings), none meaning unlimited. */
export class NodeFrameBudget implements NodeBudget {
  private bucket: TokenBucket | undefined;
  /** The budget round 1s draw from. */
  readonly first: FrameBudget = { take: (frames, now, onCredit = false) => this.take('first', frames, now, onCredit) };
  /** The budget later rounds (and the gateway check's later asks) draw from. */
  readonly later: FrameBudget = { take: (frames, now, onCredit = false) => this.take('later', frames, now, onCredit) };

  constructor(private readonly limit: () => RateLimit | undefined) {}

  /** Takes, or leaves the bucket as a held-back round 1 finds it. */
  private take(rounds: keyof NodeBudget, frames: number, now: number, onCredit: boolean): Taken {
    const limit = this.limit();
    if (!limit) return { ok: true };
    const next = onCredit
      ? { ok: true as const, bucket: takeOnCredit(this.bucket, limit, frames, now) }
      : (rounds === 'first' ? tryTake : tryTakeLater)(this.bucket, limit, frames, now);
    if (next.ok) this.bucket = next.bucket;
    else if (rounds === 'first') this.bucket = firstWaits(this.bucket, limit, now, next.waitMs);
    return next.ok ? { ok: true } : next;
  }
}

/** `rateLimit`: a sustained rate and the burst allowed on top of it. */
export interface RateLimit {
  framesPerSecond: number;
  burst: number;
}

/** Tokens available at `atMs` (boot clock). Negative after frames sent on credit. */
export interface TokenBucket {
  tokens: number;
  atMs: number;
  /**
   * Until when (boot clock) a round 1, never dropped, waits for tokens: later rounds, which may be dropped, let it go
   * first.
   */
  firstWaitsUntil?: number;
}

/** A round 1 that found no tokens is back this long after the wait it was told, at the latest. */
export const FIRST_RETURN_MS = 50;

/** The bucket at `now`: refilled at framesPerSecond, never above burst. A missing bucket is full. */
export function refill(bucket: TokenBucket | undefined, limit: RateLimit, now: number): TokenBucket {
  if (!bucket) return { tokens: limit.burst, atMs: now };
  const elapsed = Math.max(0, now - bucket.atMs);
  const tokens = Math.min(limit.burst, bucket.tokens + (elapsed * limit.framesPerSecond) / 1000);
  const refilled = { tokens, atMs: Math.max(now, bucket.atMs) };
  // A round 1's wait that has not ended by `now` is kept.
  const until = bucket.firstWaitsUntil;
  return until !== undefined && until > now ? { ...refilled, firstWaitsUntil: until } : refilled;
}

/** What a take leaves: the new bucket, or how long to wait until the frames are there. */
export type Took = { ok: true; bucket: TokenBucket } | { ok: false; waitMs: number };

/** Takes `frames` tokens: the new bucket, or how long to wait until they are there. */
export function tryTake(bucket: TokenBucket | undefined, limit: RateLimit, frames: number, now: number): Took {
  const full = refill(bucket, limit, now);
  // A round larger than the burst waits for a full bucket and then goes on credit.
  const needed = Math.min(frames, limit.burst);
  if (full.tokens >= needed) return { ok: true, bucket: { ...full, tokens: full.tokens - frames } };
  return { ok: false, waitMs: Math.ceil(((needed - full.tokens) * 1000) / limit.framesPerSecond) };
}

/** tryTake for a later round: it waits while a round 1 waits. */
export function tryTakeLater(bucket: TokenBucket | undefined, limit: RateLimit, frames: number, now: number): Took {
  const until = bucket?.firstWaitsUntil;
  if (until !== undefined && until > now) return { ok: false, waitMs: Math.ceil(until - now) };
  return tryTake(bucket, limit, frames, now);
}

/**
 * The bucket once a round 1 found too few tokens and was told to wait `waitMs`: later rounds hold back until it is
 * back.
 */
export function firstWaits(
  bucket: TokenBucket | undefined,
  limit: RateLimit,
  now: number,
  waitMs: number,
): TokenBucket {
  const full = refill(bucket, limit, now);
  return { ...full, firstWaitsUntil: Math.max(full.firstWaitsUntil ?? 0, now + waitMs + FIRST_RETURN_MS) };
}

/** Takes `frames` tokens whatever is left (round 1 of a pod that has waited long enough). */
export function takeOnCredit(
  bucket: TokenBucket | undefined,
  limit: RateLimit,
  frames: number,
  now: number,
): TokenBucket {
  const full = refill(bucket, limit, now);
  return { ...full, tokens: full.tokens - frames };
}
