/** Clock and timers, injected so that waiting and scheduling can be tested without real time. */
export interface Timers {
  /** Milliseconds on this process's monotonic clock: for durations within the process. */
  now(): number;
  /**
   * Milliseconds since boot (CLOCK_BOOTTIME), the clock of times written to state: shared with the background process,
   * never stepped.
   */
  bootMs(): number;
  /** Resolves after `ms` milliseconds. */
  sleep(ms: number): Promise<void>;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The real clock and timers of the process; `bootTimeMs` reads CLOCK_BOOTTIME (through libc). */
export function realTimers(bootTimeMs: () => number): Timers {
  return {
    // process.hrtime, not performance.now(): the `performance` global loads perf_hooks (~2 ms).
    now: () => Number(process.hrtime.bigint()) / 1e6,
    bootMs: bootTimeMs,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  };
}
