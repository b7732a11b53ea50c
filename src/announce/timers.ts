/** Clock and sleep, injected so that waiting can be tested without real time (the real ones: src/process). */
export interface Timers {
  /** Milliseconds on this process's monotonic clock: for durations within the process. */
  now(): number;
  /**
   * Milliseconds since boot (CLOCK_BOOTTIME), the clock of times written to state and of the shim's deadlines: shared
   * by every process of the node (the next announcer, `announcer status`), never stepped.
   */
  bootMs(): number;
  /** Resolves after `ms` milliseconds; in the announcer, a deadline in its loop's poll(2). */
  sleep(ms: number): Promise<void>;
}
