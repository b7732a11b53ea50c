// ADD never blocks the process that runs it (the announcer runs ADD inside its
// single-threaded loop): every wait goes through the injected waits. Here
// readable() returns a promise the test resolves by hand; until it does, ADD
// must stay pending, having announced nothing.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { announceOnAdd } from '../../../src/announce/announce-on-add';
import type { Waits } from '../../../src/announce/waits';
import { AddHarness, RECEIVER_FD } from '../../support/add-harness';
import { settle } from '../../support/manual-timers';

let h: AddHarness;
beforeEach(() => {
  h = new AddHarness();
});
afterEach(() => h.cleanup());

/** Waits that end only when the test says so. */
function handWaits(): { waits: Waits; pending: { fds: readonly number[]; ms: number; end: () => void }[] } {
  const pending: { fds: readonly number[]; ms: number; end: () => void }[] = [];
  return {
    pending,
    waits: { readable: (fds, ms) => new Promise<void>((end) => void pending.push({ fds: [...fds], ms, end })) },
  };
}

/** Starts ADD with `waits`; `finished()` says whether it has settled. */
function startAdd(
  waits: Waits,
  extra: Parameters<AddHarness['job']>[0] = {},
): { done: Promise<unknown>; finished: () => boolean } {
  let finished = false;
  const done = announceOnAdd({ ...h.deps(), waits }, h.job(extra)).finally(() => (finished = true));
  done.catch(() => undefined);
  return { done, finished: () => finished };
}

/** Lets everything queued run, several turns over (file locks, records, the announcer's fake). */
async function settleAll(): Promise<void> {
  for (let i = 0; i < 10; i++) await settle();
}

const garps = () => h.sent.filter(({ frame }) => frame.subarray(28, 32).join('.') !== '0.0.0.0');
const probes = () => h.sent.filter(({ frame }) => frame.subarray(28, 32).join('.') === '0.0.0.0');

describe('ADD never blocks', () => {
  const whilePodIsTitle =
    'while the pod is not ready: pending on one wait on the event sockets, nothing sent, until that wait ends';
  it(whilePodIsTitle, async () => {
    h.pod.links[0] = { ...h.pod.links[0]!, running: false };
    const { waits, pending } = handWaits();
    const add = startAdd(waits);
    await settleAll();
    expect(add.finished()).toBe(false);
    expect(h.sent).toEqual([]);
    expect(pending.map(({ fds, ms }) => ({ fds, ms }))).toEqual([{ fds: [50, 51], ms: 1000 }]);
    expect(h.timers.now()).toBe(0);
    // The pod gets its carrier; the wait ends.
    h.pod.links[0] = { ...h.pod.links[0]!, running: true };
    pending[0]!.end();
    await add.done;
    expect(garps()).toHaveLength(1);
    expect(pending).toHaveLength(1);
  });

  const duringConflictProbeTitle =
    'during a conflict probe window: pending on the receiver between ' +
    'probes, nothing announced, until each wait ends';
  it(duringConflictProbeTitle, async () => {
    const { waits, pending } = handWaits();
    const add = startAdd(waits, { conflictCheck: { action: 'fail', probeMs: 200, probes: 2 } });
    await settleAll();
    expect(add.finished()).toBe(false);
    expect(probes()).toHaveLength(1);
    expect(garps()).toEqual([]);
    expect(pending.map(({ fds, ms }) => ({ fds, ms }))).toEqual([{ fds: [RECEIVER_FD], ms: 100 }]);
    // Time for the second probe.
    h.timers.advance(100);
    pending[0]!.end();
    await settleAll();
    expect(add.finished()).toBe(false);
    expect(probes()).toHaveLength(2);
    expect(garps()).toEqual([]);
    expect(pending).toHaveLength(2);
    // The window ends: round 1 goes out.
    h.timers.advance(100);
    pending[1]!.end();
    await add.done;
    expect(garps()).toHaveLength(1);
  });
});
