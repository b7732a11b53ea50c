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
    now: () => performance.now(),
    epochMs: () => Date.now(),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  };
}
