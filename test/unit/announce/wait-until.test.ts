import { describe, it, expect } from 'vitest';
import { waitUntil } from '../../../src/announce/wait-until';
import { ManualTimers, settle } from '../../support/manual-timers';

/**
 * A change source on the manual clock: nextChange(ms) resolves on the next
 * emit() or when the clock reaches ms. Changes emitted while nobody waits are
 * queued, as a subscribed socket queues notifications.
 */
function changeSource(timers: ManualTimers) {
  let queued = false;
  let wake: (() => void) | undefined;
  const waits: number[] = [];
  return {
    waits,
    nextChange(ms: number): Promise<void> {
      waits.push(ms);
      if (queued) {
        queued = false;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const handle = timers.setTimeout(() => {
          wake = undefined;
          resolve();
        }, ms);
        wake = () => {
          timers.clearTimeout(handle);
          wake = undefined;
          resolve();
        };
      });
    },
    emit(): void {
      if (wake) wake();
      else queued = true;
    },
  };
}

/** An evaluate() that returns queued answers, then undefined, and counts calls. */
function scripted<T>(...answers: (T | undefined)[]) {
  let calls = 0;
  return {
    evaluate: async () => answers[calls++],
    get calls() {
      return calls;
    },
  };
}

/** Tracks whether a promise has settled, without awaiting it. */
function track<T>(p: Promise<T>): { readonly done: boolean; readonly value: T | undefined; readonly error: unknown } {
  const state = { done: false, value: undefined as T | undefined, error: undefined as unknown };
  p.then(
    (v) => Object.assign(state, { done: true, value: v }),
    (e: unknown) => Object.assign(state, { done: true, error: e }),
  );
  return state;
}

describe('waitUntil', () => {
  it('resolves at once when the first evaluation is ready, without waiting', async () => {
    const timers = new ManualTimers();
    const source = changeSource(timers);
    const probe = scripted('ready');
    await expect(
      waitUntil({ evaluate: probe.evaluate, nextChange: source.nextChange, timeoutMs: 1000, timers }),
    ).resolves.toBe('ready');
    expect(probe.calls).toBe(1);
    expect(source.waits).toEqual([]);
  });

  it('re-evaluates after a change and resolves, leaving no timer behind', async () => {
    const timers = new ManualTimers();
    const source = changeSource(timers);
    const probe = scripted<string>(undefined, 'ready');
    const wait = track(waitUntil({ evaluate: probe.evaluate, nextChange: source.nextChange, timeoutMs: 1000, timers }));
    await settle();
    expect(wait.done).toBe(false);
    expect(source.waits).toEqual([1000]);
    timers.advance(300);
    source.emit();
    await settle();
    expect(wait.value).toBe('ready');
    expect(probe.calls).toBe(2);
    expect(timers.pending()).toEqual([]);
  });

  it('waits only for the time left until the deadline', async () => {
    const timers = new ManualTimers();
    const source = changeSource(timers);
    const probe = scripted<string>();
    const wait = track(waitUntil({ evaluate: probe.evaluate, nextChange: source.nextChange, timeoutMs: 1000, timers }));
    await settle();
    timers.advance(400);
    source.emit();
    await settle();
    expect(source.waits).toEqual([1000, 600]);
    expect(wait.done).toBe(false);
    timers.advance(600);
    await settle();
    expect(wait.done).toBe(true);
    expect(wait.value).toBeUndefined();
    expect(probe.calls).toBe(3); // first, after the change, and a final one at the deadline
  });

  it('returns what the final evaluation at the deadline finds', async () => {
    const timers = new ManualTimers();
    const source = changeSource(timers);
    const probe = scripted<string>(undefined, 'late');
    const wait = track(waitUntil({ evaluate: probe.evaluate, nextChange: source.nextChange, timeoutMs: 500, timers }));
    await settle();
    timers.advance(500);
    await settle();
    expect(wait.value).toBe('late');
  });

  it('does not lose a change that arrives while evaluating: it evaluates again at once', async () => {
    const timers = new ManualTimers();
    const source = changeSource(timers);
    let calls = 0;
    const evaluate = async (): Promise<string | undefined> => {
      calls++;
      if (calls === 1) source.emit(); // the state changed while the first evaluation was reading it
      return calls === 2 ? 'ready' : undefined;
    };
    const wait = track(waitUntil({ evaluate, nextChange: source.nextChange, timeoutMs: 1000, timers }));
    await settle();
    expect(wait.value).toBe('ready');
    expect(timers.now()).toBe(0);
  });

  it('rejects with the error evaluate throws', async () => {
    const timers = new ManualTimers();
    const source = changeSource(timers);
    const evaluate = async (): Promise<string | undefined> => {
      throw new Error('netlink gone');
    };
    await expect(waitUntil({ evaluate, nextChange: source.nextChange, timeoutMs: 1000, timers })).rejects.toThrow(
      'netlink gone',
    );
  });

  it('evaluates exactly once with timeoutMs 0, and never waits', async () => {
    const timers = new ManualTimers();
    const source = changeSource(timers);
    const probe = scripted<string>();
    await expect(
      waitUntil({ evaluate: probe.evaluate, nextChange: source.nextChange, timeoutMs: 0, timers }),
    ).resolves.toBeUndefined();
    expect(probe.calls).toBe(1);
    expect(source.waits).toEqual([]);
  });

  it('resolves with a ready value even with timeoutMs 0', async () => {
    const timers = new ManualTimers();
    const source = changeSource(timers);
    await expect(
      waitUntil({ evaluate: async () => 'ok', nextChange: source.nextChange, timeoutMs: 0, timers }),
    ).resolves.toBe('ok');
  });
});
