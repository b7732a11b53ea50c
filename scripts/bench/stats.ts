// Order statistics of a sample, for the bench table.

/** The q-quantile (0..1) of xs, linear between the two nearest ranks; NaN for no samples. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/** The median of xs (the mean of the two middle values for an even count). */
export function median(xs: readonly number[]): number {
  return quantile(xs, 0.5);
}
