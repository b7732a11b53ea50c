/** Clock and timers, injected so that waiting and scheduling can be tested without real time. */
export interface Timers {
  /** Milliseconds on a monotonic clock. */
  now(): number;
  /** Milliseconds since the epoch: the clock shared with the background process. */
  epochMs(): number;
  /** Resolves after `ms` milliseconds. */
  sleep(ms: number): Promise<void>;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The real clock and timers of the process. */
export function realTimers(): Timers {
  return {
    // process.hrtime, not performance.now(): the `performance` global loads perf_hooks (~2 ms).
    now: () => Number(process.hrtime.bigint()) / 1e6,
    epochMs: () => Date.now(),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  };
}
