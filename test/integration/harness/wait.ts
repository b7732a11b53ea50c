// Waiting for a condition by polling, with a bound. Tests wait with this; they
// never assert how long something took.
import { setTimeout as sleep } from 'node:timers/promises';

/** How waitFor polls. */
export interface WaitOptions {
  /** Give up after this long. Default 10 s. */
  timeoutMs?: number;
  /** Pause between checks. Default 50 ms. */
  intervalMs?: number;
  /** What is awaited, for the timeout message. */
  what?: string;
}

/**
 * Calls check until it returns something other than undefined/false and
 * resolves with that; rejects (naming `what` and the last value) after timeoutMs.
 */
export async function waitFor<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  opts: WaitOptions = {},
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() >= deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${opts.what ?? 'a condition'}`);
    await sleep(opts.intervalMs ?? 50);
  }
}

/** A flag that turns true once `p` settles (either way; the caller awaits p for its outcome). */
export function settledFlag(p: Promise<unknown>): { settled: boolean } {
  const flag = { settled: false };
  p.then(
    () => (flag.settled = true),
    () => (flag.settled = true),
  );
  return flag;
}

/** Runs `work` on every item, at most `width` at a time, in order; `between` after each batch. */
export async function inBatches<T, R>(
  items: readonly T[],
  width: number,
  work: (item: T, index: number) => Promise<R>,
  between: () => Promise<void> = async () => undefined,
): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) {
    out.push(...(await Promise.all(items.slice(i, i + width).map((item, k) => work(item, i + k)))));
    await between();
  }
  return out;
}
