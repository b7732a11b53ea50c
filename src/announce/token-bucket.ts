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
}

/** The bucket at `now`: refilled at framesPerSecond, never above burst. A missing bucket is full. */
export function refill(bucket: TokenBucket | undefined, limit: RateLimit, now: number): TokenBucket {
  if (!bucket) return { tokens: limit.burst, atMs: now };
  const elapsed = Math.max(0, now - bucket.atMs);
  return { tokens: Math.min(limit.burst, bucket.tokens + (elapsed * limit.framesPerSecond) / 1000), atMs: Math.max(now, bucket.atMs) };
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
  if (full.tokens >= needed) return { ok: true, bucket: { tokens: full.tokens - frames, atMs: full.atMs } };
  return { ok: false, waitMs: Math.ceil(((needed - full.tokens) * 1000) / limit.framesPerSecond) };
}

/** Takes `frames` tokens whatever is left (round 1 of a pod that has waited long enough). */
export function takeOnCredit(bucket: TokenBucket | undefined, limit: RateLimit, frames: number, now: number): TokenBucket {
  const full = refill(bucket, limit, now);
  return { tokens: full.tokens - frames, atMs: full.atMs };
}
