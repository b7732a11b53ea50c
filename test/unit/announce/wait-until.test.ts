import { describe, it, expect } from 'vitest';
import type { Timers } from '../../../src/announce/timers';
import { waitUntil } from '../../../src/announce/wait-until';

/** Timers on a manual clock: nothing happens until `advance` moves it. */
class ManualTimers implements Timers {
  private clock = 0;
  private nextId = 1;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();
  /** Every setTimeout delay asked for, in order. */
  readonly requested: number[] = [];

  now(): number {
    return this.clock;
  }

  epochMs(): number {
    return 1_700_000_000_000 + this.clock;
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

/** An event source that counts subscriptions and can emit on demand. */
function eventSource(): {
  subscribe: (onEvent: () => void) => () => void;
  emit: () => void;
  readonly subscribed: number;
  readonly unsubscribed: number;
  readonly listeners: number;
} {
  const listeners = new Set<() => void>();
  let subscribed = 0;
  let unsubscribed = 0;
  return {
    subscribe(onEvent) {
      subscribed++;
      listeners.add(onEvent);
      return () => {
        unsubscribed++;
        listeners.delete(onEvent);
      };
    },
    emit: () => [...listeners].forEach((l) => l()),
    get subscribed() {
      return subscribed;
    },
    get unsubscribed() {
      return unsubscribed;
    },
    get listeners() {
      return listeners.size;
    },
  };
}

/** An evaluate() that returns queued answers, then undefined, and counts calls. */
function scripted<T>(...answers: (T | undefined)[]): { evaluate: () => Promise<T | undefined>; readonly calls: number } {
  let calls = 0;
  return {
    evaluate: async () => answers[calls++],
    get calls() {
      return calls;
    },
  };
}

/** Lets every queued promise continuation run (one macrotask turn; no clock involved). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Tracks whether a promise has settled, without awaiting it. */
function track<T>(p: Promise<T>): { readonly done: boolean; readonly value: T | undefined } {
  const state = { done: false, value: undefined as T | undefined };
  p.then(
    (v) => {
      state.done = true;
      state.value = v;
    },
    () => {
      state.done = true;
    },
  );
  return state;
}

describe('waitUntil', () => {
  it('resolves at once when the first evaluation is ready, subscribing before evaluating', async () => {
    const timers = new ManualTimers();
    const events = eventSource();
    const order: string[] = [];
    const value = await waitUntil({
      timeoutMs: 1000,
      timers,
      subscribe: (onEvent) => {
        order.push('subscribe');
        return events.subscribe(onEvent);
      },
      evaluate: async () => {
        order.push('evaluate');
        return 'ready';
      },
    });
    expect(value).toBe('ready');
    expect(order).toEqual(['subscribe', 'evaluate']);
    expect(timers.requested).toEqual([]);
    expect(events.unsubscribed).toBe(1);
    expect(events.listeners).toBe(0);
  });

  it('re-evaluates on an event and resolves, cancelling its timer', async () => {
    const timers = new ManualTimers();
    const events = eventSource();
    const probe = scripted<string>(undefined, 'ready');
    const wait = track(waitUntil({ timeoutMs: 1000, timers, subscribe: events.subscribe, evaluate: probe.evaluate }));

    await settle();
    expect(probe.calls).toBe(1);
    expect(wait.done).toBe(false);
    expect(timers.pending()).toEqual([1000]);

    events.emit();
    await settle();
    expect(wait.done).toBe(true);
    expect(wait.value).toBe('ready');
    expect(probe.calls).toBe(2);
    expect(timers.now()).toBe(0);
    expect(timers.pending()).toEqual([]);
    expect(events.unsubscribed).toBe(1);
  });

  it('evaluates once per batch of events', async () => {
    const timers = new ManualTimers();
    const events = eventSource();
    const probe = scripted<string>(undefined, undefined, 'ready');
    const wait = track(waitUntil({ timeoutMs: 1000, timers, subscribe: events.subscribe, evaluate: probe.evaluate }));

    await settle();
    events.emit();
    events.emit();
    events.emit();
    await settle();
    expect(probe.calls).toBe(2);
    expect(wait.done).toBe(false);

    events.emit();
    await settle();
    expect(probe.calls).toBe(3);
    expect(wait.value).toBe('ready');
  });

  it('returns undefined at the deadline, after a final evaluation', async () => {
    const timers = new ManualTimers();
    const events = eventSource();
    const probe = scripted<string>();
    const wait = track(waitUntil({ timeoutMs: 500, timers, subscribe: events.subscribe, evaluate: probe.evaluate }));

    await settle();
    expect(probe.calls).toBe(1);
    timers.advance(499);
    await settle();
    expect(wait.done).toBe(false);
    expect(probe.calls).toBe(1);

    timers.advance(1);
    await settle();
    expect(wait.done).toBe(true);
    expect(wait.value).toBeUndefined();
    expect(probe.calls).toBe(2);
    expect(timers.requested).toEqual([500]);
    expect(events.unsubscribed).toBe(1);
    expect(events.listeners).toBe(0);
  });

  it('returns what the final evaluation at the deadline finds', async () => {
    const timers = new ManualTimers();
    const events = eventSource();
    const probe = scripted<string>(undefined, 'just in time');
    const wait = track(waitUntil({ timeoutMs: 500, timers, subscribe: events.subscribe, evaluate: probe.evaluate }));

    await settle();
    timers.advance(500);
    await settle();
    expect(wait.value).toBe('just in time');
    expect(probe.calls).toBe(2);
  });

  it('waits only for the time left after a slow evaluation', async () => {
    const timers = new ManualTimers();
    const events = eventSource();
    let calls = 0;
    const wait = track(
      waitUntil<string>({
        timeoutMs: 1000,
        timers,
        subscribe: events.subscribe,
        evaluate: async () => {
          calls++;
          if (calls === 1) timers.advance(300);
          return undefined;
        },
      }),
    );

    await settle();
    expect(timers.requested).toEqual([700]);
    expect(timers.pending()).toEqual([1000]);
    timers.advance(700);
    await settle();
    expect(wait.done).toBe(true);
    expect(wait.value).toBeUndefined();
    expect(calls).toBe(2);
  });

  it('does not lose an event that arrives while evaluating: it evaluates again at once', async () => {
    const timers = new ManualTimers();
    const events = eventSource();
    let release!: () => void;
    let calls = 0;
    const wait = track(
      waitUntil<string>({
        timeoutMs: 1000,
        timers,
        subscribe: events.subscribe,
        evaluate: () => {
          calls++;
          if (calls === 1) return new Promise((resolve) => (release = () => resolve(undefined)));
          return Promise.resolve('ready');
        },
      }),
    );

    await settle();
    expect(calls).toBe(1);
    events.emit(); // the state changed while the first evaluation was reading it
    release();
    await settle();
    expect(wait.done).toBe(true);
    expect(wait.value).toBe('ready');
    expect(calls).toBe(2);
    expect(timers.now()).toBe(0);
    expect(timers.requested).toEqual([]);
  });

  it('rejects with the error evaluate throws, and unsubscribes', async () => {
    const timers = new ManualTimers();
    const events = eventSource();
    const wait = waitUntil({
      timeoutMs: 1000,
      timers,
      subscribe: events.subscribe,
      evaluate: async () => {
        throw new Error('RTM_GETLINK: ENODEV');
      },
    });
    await expect(wait).rejects.toThrow('RTM_GETLINK: ENODEV');
    expect(events.subscribed).toBe(1);
    expect(events.unsubscribed).toBe(1);
    expect(events.listeners).toBe(0);
  });

  it('rejects and unsubscribes when a later evaluation throws', async () => {
    const timers = new ManualTimers();
    const events = eventSource();
    let calls = 0;
    const wait = waitUntil<string>({
      timeoutMs: 1000,
      timers,
      subscribe: events.subscribe,
      evaluate: async () => {
        if (++calls === 2) throw new Error('netns gone');
        return undefined;
      },
    });
    const outcome = wait.then(
      () => 'resolved',
      (err: Error) => err.message,
    );
    await settle();
    events.emit();
    expect(await outcome).toBe('netns gone');
    expect(events.unsubscribed).toBe(1);
    expect(timers.pending()).toEqual([]);
  });

  it('evaluates exactly once with timeoutMs 0', async () => {
    const timers = new ManualTimers();
    const events = eventSource();
    const probe = scripted<string>();
    const value = await waitUntil({ timeoutMs: 0, timers, subscribe: events.subscribe, evaluate: probe.evaluate });
    expect(value).toBeUndefined();
    expect(probe.calls).toBe(1);
    expect(timers.requested).toEqual([]);
    expect(events.subscribed).toBe(1);
    expect(events.unsubscribed).toBe(1);
  });

  it('resolves with a ready value even with timeoutMs 0', async () => {
    const timers = new ManualTimers();
    const events = eventSource();
    const probe = scripted('ready');
    expect(await waitUntil({ timeoutMs: 0, timers, subscribe: events.subscribe, evaluate: probe.evaluate })).toBe('ready');
    expect(events.unsubscribed).toBe(1);
  });
});
