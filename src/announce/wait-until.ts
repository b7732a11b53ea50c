import type { Timers } from './timers';

/** What {@link waitUntil} needs: a state probe, an event source and a bound. */
export interface WaitSpec<T> {
  /** Reads the current state; returns a value once the wait is over, undefined to keep waiting. */
  evaluate(): Promise<T | undefined>;
  /** Subscribes to change notifications; returns the unsubscribe function. */
  subscribe(onEvent: () => void): () => void;
  /** The longest to wait, in ms. */
  timeoutMs: number;
  timers: Timers;
}

/**
 * Event-driven, bounded wait: subscribes first, then evaluates, and evaluates
 * again after each batch of events, until `evaluate` returns a value or the
 * time runs out (then it returns undefined). Never polls.
 */
export async function waitUntil<T>(spec: WaitSpec<T>): Promise<T | undefined> {
  const { timers } = spec;
  const deadline = timers.now() + spec.timeoutMs;
  let pending = false;
  let wake: (() => void) | undefined;
  const unsubscribe = spec.subscribe(() => {
    pending = true;
    wake?.();
  });
  try {
    for (;;) {
      pending = false;
      const value = await spec.evaluate();
      if (value !== undefined) return value;
      const left = deadline - timers.now();
      if (left <= 0) return undefined;
      if (!pending) {
        await new Promise<void>((resolve) => {
          const handle = timers.setTimeout(() => {
            wake = undefined;
            resolve();
          }, left);
          wake = () => {
            wake = undefined;
            timers.clearTimeout(handle);
            resolve();
          };
        });
      }
    }
  } finally {
    unsubscribe();
  }
}
