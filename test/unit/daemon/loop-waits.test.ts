// The commands' waits, settled by the announcer's one poll(2): on a readable
// fd or at the deadline, the poll's timeout from the first deadline, all at
// once when the announcer stops.
import { describe, expect, it } from 'vitest';
import { LoopWaits } from '../../../src/daemon/loop-waits';
import { settle } from '../../support/manual-timers';

/** Waits on a clock the test moves, and which of them have resolved. */
function setup(): {
  waits: LoopWaits;
  clock: { now: number };
  done: string[];
  track(name: string, p: Promise<void>): void;
} {
  const clock = { now: 100 };
  const done: string[] = [];
  return { waits: new LoopWaits(() => clock.now), clock, done, track: (name, p) => void p.then(() => done.push(name)) };
}

describe('LoopWaits', () => {
  it('settles a wait once one of its fds is readable, not on another fd', async () => {
    const { waits, done, track } = setup();
    track('a', waits.readable([7, 8], 5000));
    track('b', waits.readable([9], 5000));
    expect(waits.fds()).toEqual([7, 8, 9]);
    waits.settle(new Set([10]));
    await settle();
    expect(done).toEqual([]);
    waits.settle(new Set([8]));
    await settle();
    expect(done).toEqual(['a']);
    expect(waits.fds()).toEqual([9]);
  });

  it('settles at the deadline, not a millisecond before; sleep is a wait without fds', async () => {
    const { waits, clock, done, track } = setup();
    track('read', waits.readable([7], 300));
    track('sleep', waits.sleep(200));
    expect(waits.fds()).toEqual([7]);
    clock.now += 199;
    waits.settle(new Set());
    await settle();
    expect(done).toEqual([]);
    clock.now += 1;
    waits.settle(new Set());
    await settle();
    expect(done).toEqual(['sleep']);
    clock.now += 100;
    waits.settle(new Set());
    await settle();
    expect(done).toEqual(['sleep', 'read']);
  });

  it('msLeft: until the first deadline, 0 once past, Infinity with none; a negative wait is due at once', async () => {
    const { waits, clock, done, track } = setup();
    expect(waits.msLeft()).toBe(Infinity);
    track('late', waits.readable([], 500));
    track('soon', waits.sleep(300));
    expect(waits.msLeft()).toBe(300);
    clock.now += 400;
    expect(waits.msLeft()).toBe(0);
    waits.settle(new Set());
    await settle();
    expect([done, waits.msLeft()]).toEqual([['soon'], 100]);
    track('now', waits.sleep(-5));
    expect(waits.msLeft()).toBe(0);
  });

  it('fds() lists an fd two waits share once; both settle on it', async () => {
    const { waits, done, track } = setup();
    track('a', waits.readable([7], 1000));
    track('b', waits.readable([7], 1000));
    expect(waits.fds()).toEqual([7]);
    waits.settle(new Set([7]));
    await settle();
    expect(done).toEqual(['a', 'b']);
  });

  it('settleAll settles every wait (the announcer stops)', async () => {
    const { waits, done, track } = setup();
    track('a', waits.readable([7], 1000));
    track('b', waits.sleep(60_000));
    waits.settleAll();
    await settle();
    expect([done, waits.fds(), waits.msLeft()]).toEqual([['a', 'b'], [], Infinity]);
  });

  const abortTitle =
    "rejects a wait with its signal's reason once it aborts (its command stopped), and one begun after at once; " +
    'the others wait on';
  it(abortTitle, async () => {
    const { waits, done, track } = setup();
    const stop = new AbortController();
    const stopped = waits.readable([7], 5000, stop.signal);
    track('other', waits.readable([8], 5000));
    expect(waits.fds()).toEqual([7, 8]);
    const reason = new Error('the announcer stops');
    stop.abort(reason);
    await expect(stopped).rejects.toBe(reason);
    expect(waits.fds()).toEqual([8]);
    await expect(waits.sleep(100, stop.signal)).rejects.toBe(reason);
    expect(waits.msLeft()).toBe(5000);
    waits.settle(new Set([8]));
    await settle();
    expect(done).toEqual(['other']);
  });

  it('a wait settled before its signal aborts stays settled', async () => {
    const { waits, clock } = setup();
    const stop = new AbortController();
    const slept = waits.sleep(10, stop.signal);
    clock.now += 10;
    waits.settle(new Set());
    await slept;
    stop.abort(new Error('late'));
    expect(waits.msLeft()).toBe(Infinity);
  });
});
