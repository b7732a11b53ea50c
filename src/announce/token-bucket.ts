// Pure: the node-wide frame budget, a token bucket (no I/O). Switches police
// ARP per port (Cisco DAI: 15 packets/s by default, then the port is
// error-disabled), so every frame the node sends draws from one bucket.

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
  return withFirstWait({ tokens, atMs: Math.max(now, bucket.atMs) }, bucket.firstWaitsUntil, now);
}

/** `bucket` keeping a round 1's wait that has not ended by `now`. */
function withFirstWait(bucket: TokenBucket, until: number | undefined, now: number): TokenBucket {
  return until !== undefined && until > now ? { ...bucket, firstWaitsUntil: until } : bucket;
}

/** Takes `frames` tokens: the new bucket, or how long to wait until they are there. */
export function tryTake(
  bucket: TokenBucket | undefined,
  limit: RateLimit,
  frames: number,
  now: number,
): { ok: true; bucket: TokenBucket } | { ok: false; waitMs: number } {
  const full = refill(bucket, limit, now);
  // A round larger than the burst waits for a full bucket and then goes on credit.
  const needed = Math.min(frames, limit.burst);
  if (full.tokens >= needed) return { ok: true, bucket: { ...full, tokens: full.tokens - frames } };
  return { ok: false, waitMs: Math.ceil(((needed - full.tokens) * 1000) / limit.framesPerSecond) };
}

/** tryTake for a later round: it waits while a round 1 waits. */
export function tryTakeLater(
  bucket: TokenBucket | undefined,
  limit: RateLimit,
  frames: number,
  now: number,
): { ok: true; bucket: TokenBucket } | { ok: false; waitMs: number } {
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
