/** Clock and sleep, injected so that waiting can be tested without real time (the real ones: src/process). */
export interface Timers {
  /** Milliseconds on this process's monotonic clock: for durations within the process. */
  now(): number;
  /**
   * Milliseconds since boot (CLOCK_BOOTTIME), the clock of times written to state: shared with the background process,
   * never stepped.
   */
  bootMs(): number;
  /** Resolves after `ms` milliseconds; in the announcer, a deadline in its loop's poll(2). */
  sleep(ms: number): Promise<void>;
}
