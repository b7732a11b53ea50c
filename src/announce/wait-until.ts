import type { Timers } from './context';

/** What {@link waitUntil} needs: a state probe, a change source and a bound. */
export interface WaitSpec<T> {
  /** Reads the current state; returns a value once the wait is over, undefined to keep waiting. */
  evaluate(): Promise<T | undefined>;
  /**
   * Resolves once the state may have changed, or after `ms` at the latest. The
   * source must be listening before the wait starts (a subscribed socket
   * queues what arrives meanwhile), so that no change slips between a read
   * and the next wait.
   */
  nextChange(ms: number): Promise<void>;
  /** The longest to wait, in ms. */
  timeoutMs: number;
  timers: Timers;
}

/**
 * Event-driven, bounded wait: evaluates, then evaluates again after each
 * change, until `evaluate` returns a value or the time runs out (then it
 * returns undefined). Never polls on a timer of its own.
 */
export async function waitUntil<T>(spec: WaitSpec<T>): Promise<T | undefined> {
  const deadline = spec.timers.now() + spec.timeoutMs;
  for (;;) {
    const value = await spec.evaluate();
    if (value !== undefined) return value;
    const left = deadline - spec.timers.now();
    if (left <= 0) return undefined;
    await spec.nextChange(left);
  }
}
