// A manual clock for tests: nothing happens until `advance` moves it.
import type { Timers } from '../../src/announce/context';

/** Timers on a manual clock; `bootMs` runs with `now` from a fixed offset. */
export class ManualTimers implements Timers {
  private clock = 0;
  private nextId = 1;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();
  /** Every setTimeout delay asked for, in order. */
  readonly requested: number[] = [];

  now(): number {
    return this.clock;
  }

  bootMs(): number {
    return 1_000_000 + this.clock;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimeout(resolve, ms));
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.requested.push(ms);
    this.timers.set(id, { at: this.clock + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Deadlines of the pending timers, soonest first. */
  pending(): number[] {
    return [...this.timers.values()].map((t) => t.at).sort((a, b) => a - b);
  }

  /** Moves the clock forward by `ms`, firing due timers in deadline order. */
  advance(ms: number): void {
    const target = this.clock + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, t]) => t.at <= target).sort(([, a], [, b]) => a.at - b.at)[0];
      if (!due) break;
      const [id, timer] = due;
      this.timers.delete(id);
      this.clock = timer.at;
      timer.fn();
    }
    this.clock = target;
  }
}

/** Lets every queued promise continuation run (one macrotask turn; no clock involved). */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
