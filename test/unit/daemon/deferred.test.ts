// Round 1 of a pod that was not ready during ADD: the wait keeps one session
// open, round 1 goes out once the pod is ready, the budget delays it but never
// drops it, and the wait ends when the pod goes or never becomes ready.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BackgroundJob } from '../../../src/announce/background-job';
import { newCounters, type Counters } from '../../../src/daemon/counters';
import { gratuitousArp } from '../../../src/wire/arp';
import { runDeferred, waitFds } from '../../../src/daemon/deferred';
import { dropDeferred, type RoundDeps, type Work } from '../../../src/daemon/rounds';
import { fakeLibc } from '../../support/fake-libc';
import { FakePod, jobIn, keptLog, link, makeStateDir, ScriptedBudget, type StateDir } from '../../support/daemon-fakes';
import { ManualTimers } from '../../support/manual-timers';
import { identityViews } from '../../support/caller-view-fakes';

const T0 = 1_000_000;
const DEADLINE = T0 + 10_000;

let state: StateDir;
let pod: FakePod;
let budget: ScriptedBudget;
let closed: number[];
let counters: Counters;
let lines: string[];
let deps: RoundDeps;

beforeEach(() => {
  state = makeStateDir();
  pod = new FakePod();
  budget = new ScriptedBudget();
  closed = [];
  counters = newCounters();
  deps = {
    libc: fakeLibc({}),
    open: pod.opener(),
    views: identityViews,
    closeInBackground: (fd) => void closed.push(fd),
    timers: new ManualTimers(),
    budget: budget.budget,
  };
});
afterEach(() => state.remove());

/** Frames sent that announce (a probe's sender IP is 0.0.0.0). */
const announced = (): number => pod.sent.filter((f) => f.readUInt32BE(28) !== 0).length;

function waiting(extra: Partial<BackgroundJob> = {}): Work {
  const job = jobIn(state, { firstRoundAt: undefined, readyDeadline: DEADLINE, ...extra });
  const kept = keptLog();
  lines = kept.lines;
  return {
    name: 'c1@eth0.json',
    job,
    originalMacs: [],
    log: kept.log,
    firstRoundAt: undefined,
    next: 0,
    dueAt: undefined,
    roundsSent: 0,
    delayed: false,
    deferred: { checkAt: T0 },
  };
}

describe('runDeferred', () => {
  it('sends round 1 once the pod is ready, closes the wait, and schedules round 2 from then', async () => {
    budget.limit = { framesPerSecond: 20, burst: 5 };
    const w = waiting();
    expect(await runDeferred(deps, counters, w, T0 + 700)).toBeUndefined();
    expect(budget.calls).toEqual([
      { limit: { framesPerSecond: 20, burst: 5 }, frames: 1, onCredit: false, at: 1_000_000 },
    ]); // the boot clock
    expect(pod.sent).toHaveLength(1);
    expect({
      deferred: w.deferred,
      firstRoundAt: w.firstRoundAt,
      next: w.next,
      dueAt: w.dueAt,
      roundsSent: w.roundsSent,
    }).toEqual({
      deferred: undefined,
      firstRoundAt: T0 + 700,
      next: 1,
      dueAt: T0 + 1700,
      roundsSent: 1,
    });
    expect(counters.deferred).toEqual({ started: 0, ready: 1, timedOut: 0, gone: 0 });
    expect(counters.rounds.sent).toBe(1);
    expect(counters.frames.garpRequest).toBe(1);
    expect({ open: pod.open, closed }).toEqual({ open: 0, closed: pod.released });
    expect(lines.some((l) => l.includes('INFO announced round=1 of=3 frames=1 deferred=true'))).toBe(true);
  });

  it('ends the burst at once when the schedule has one round', async () => {
    expect(await runDeferred(deps, counters, waiting({ schedule: [0] }), T0)).toEqual({ why: undefined });
  });

  it('keeps one session open while the pod is not ready, looking again CHECK_MS later', async () => {
    const w = waiting();
    pod.links = [link({ running: false })];
    expect(await runDeferred(deps, counters, w, T0)).toBeUndefined();
    expect(await runDeferred(deps, counters, w, T0 + 500)).toBeUndefined();
    expect({ opened: pod.opened, open: pod.open, closed, checkAt: w.deferred?.checkAt, sent: pod.sent.length }).toEqual(
      { opened: 1, open: 1, closed: [], checkAt: T0 + 1000, sent: 0 },
    );
    expect(w.deferred?.open?.session.eventFds).toEqual([50, 51]);
    pod.links = [link()];
    await runDeferred(deps, counters, w, T0 + 800);
    expect({ opened: pod.opened, open: pod.open, sent: pod.sent.length }).toEqual({ opened: 1, open: 0, sent: 1 });
  });

  it('gives up at the ready deadline, and not before', async () => {
    const w = waiting();
    pod.links = [link({ up: false })];
    expect(await runDeferred(deps, counters, w, DEADLINE - 1)).toBeUndefined();
    expect(await runDeferred(deps, counters, w, DEADLINE)).toEqual({ why: 'ready timeout' });
    expect(counters.deferred.timedOut).toBe(1);
    expect(lines.some((l) => l.includes('pod never became ready') && l.includes('eth0 is down'))).toBe(true);
  });

  it('ends when the interface is gone (at open or later) or the netns cannot be entered, counted as gone', async () => {
    pod.links = [];
    expect(await runDeferred(deps, counters, waiting(), T0)).toEqual({ why: 'pod interface eth0 gone' });
    const w = waiting();
    pod.links = [link({ up: false })];
    await runDeferred(deps, counters, w, T0);
    pod.links = [link({ name: 'other' })];
    expect(await runDeferred(deps, counters, w, T0 + 500)).toEqual({ why: 'pod interface eth0 gone' });
    pod.openError = new Error('EPERM');
    expect(await runDeferred(deps, counters, waiting(), T0)).toEqual({ why: 'cannot enter pod netns: EPERM' });
    expect(counters.deferred.gone).toBe(3);
  });

  const heldBackByTitle =
    'held back by the budget: keeps its session, closes nothing, never ' +
    'dropped; at the ready deadline it goes on credit';
  it(heldBackByTitle, async () => {
    const w = waiting();
    budget.answers.push(200, 5000);
    expect(await runDeferred(deps, counters, w, T0)).toBeUndefined();
    expect(w.deferred?.checkAt).toBe(T0 + 200);
    expect(await runDeferred(deps, counters, w, T0 + 200)).toBeUndefined();
    expect(w.deferred?.checkAt).toBe(T0 + 700); // never longer than CHECK_MS
    expect({
      opened: pod.opened,
      closed,
      delayed: counters.rateLimited.delayed,
      dropped: counters.rateLimited.dropped,
    }).toEqual({ opened: 1, closed: [], delayed: 1, dropped: 0 });
    expect(await runDeferred(deps, counters, w, DEADLINE)).toBeUndefined();
    expect(budget.calls.map((c) => c.onCredit)).toEqual([false, false, true]);
    expect({ sent: pod.sent.length, deferred: w.deferred, delayed: w.delayed }).toEqual({
      sent: 1,
      deferred: undefined,
      delayed: false,
    });
  });

  const probesForConflictsTitle =
    'probes for conflicts once per wait, not again when the budget holds round 1 ' +
    'back; a failed probe is counted and announces anyway';
  it(probesForConflictsTitle, async () => {
    const w = waiting({ conflictCheck: { action: 'warn', probeMs: 100, probes: 1 } });
    budget.answers.push(100, 100);
    await runDeferred(deps, counters, w, T0);
    await runDeferred(deps, counters, w, T0 + 100);
    await runDeferred(deps, counters, w, T0 + 200);
    expect({ probes: pod.probes, errors: counters.errors, sent: pod.sent.length }).toEqual({
      probes: 1,
      errors: 1,
      sent: 1,
    });
    expect(
      lines.some(
        (l) => l.includes('conflict probe failed: announcing without it') && l.includes('no ARP receivers here'),
      ),
    ).toBe(true);
  });

  const leavesOutAddressesTitle =
    'leaves out the addresses another host answers for, in round 1 and the rounds after, ' +
    'counted and logged; the probe receivers close in the background';
  it(leavesOutAddressesTitle, async () => {
    const other = Buffer.from('02aabbccddee', 'hex');
    pod.arpFrames = [gratuitousArp({ mac: other, ip: Buffer.from([10, 88, 0, 5]), op: 'reply' })];
    const timers = deps.timers as ManualTimers;
    deps.libc = fakeLibc({ pollIn: (fds, ms) => (timers.advance(ms), fds.map(() => true)) });
    for (const action of ['warn', 'fail'] as const) {
      const w = waiting({ conflictCheck: { action, probeMs: 100, probes: 1 } });
      budget.answers.push(50);
      await runDeferred(deps, counters, w, T0);
      expect({ sent: announced(), conflicts: counters.conflicts, interfaces: w.job.interfaces }).toEqual({
        sent: 0,
        conflicts: 1,
        interfaces: [{ name: 'eth0', ipv4: [], ipv6: [] }],
      });
      // Held back, round 1 comes again: no second probe, still without the address.
      await runDeferred(deps, counters, w, T0 + 50);
      expect({ probes: pod.probes, sent: announced(), conflicts: counters.conflicts }).toEqual({
        probes: 1,
        sent: 0,
        conflicts: 1,
      });
      expect(closed).toContain(60);
      expect(
        lines.some(
          (l) => l.includes('WARN address conflict: not announcing 10.88.0.5') && l.includes('mac=02:aa:bb:cc:dd:ee'),
        ),
      ).toBe(true);
      expect(lines.some((l) => l.includes('conflictCheck is fail, but ADD has returned'))).toBe(action === 'fail');
      pod.probes = 0;
      counters.conflicts = 0;
      pod.arpFrames = [gratuitousArp({ mac: other, ip: Buffer.from([10, 88, 0, 5]), op: 'reply' })];
    }
  });

  const probesInStepsTitle =
    'probes in steps without waiting (receivers polled with timeout 0), then ' +
    'announces everything when the window found no conflict';
  it(probesInStepsTitle, async () => {
    pod.arpFrames = [];
    const timeouts: number[] = [];
    deps.libc = fakeLibc({ pollIn: (fds, ms) => (timeouts.push(ms), fds.map(() => false)) });
    const w = waiting({ conflictCheck: { action: 'warn', probeMs: 100, probes: 2 } });
    expect(await runDeferred(deps, counters, w, T0)).toBeUndefined();
    // The first probe is out, round 1 is not; the wait comes back at the second probe, its receiver polled with the
    // pod's event sockets.
    expect({ probes: pod.sent.length, sent: announced(), checkAt: w.deferred?.checkAt, fds: waitFds(w) }).toEqual({
      probes: 1,
      sent: 0,
      checkAt: T0 + 50,
      fds: [50, 51, 60],
    });
    expect(await runDeferred(deps, counters, w, T0 + 50)).toBeUndefined();
    expect({ probes: pod.sent.length, checkAt: w.deferred?.checkAt, closed }).toEqual({
      probes: 2,
      checkAt: T0 + 100,
      closed: [],
    });
    await runDeferred(deps, counters, w, T0 + 100);
    expect({
      receivers: pod.probes,
      sent: announced(),
      conflicts: counters.conflicts,
      errors: counters.errors,
    }).toEqual({ receivers: 1, sent: 1, conflicts: 0, errors: 0 });
    expect(timeouts.every((ms) => ms === 0)).toBe(true);
    expect(closed).toContain(60);
  });

  it('gives up an unfinished probe window with the wait: its receivers are handed off', async () => {
    pod.arpFrames = [];
    deps.libc = fakeLibc({ pollIn: (fds) => fds.map(() => false) });
    const w = waiting({ conflictCheck: { action: 'warn', probeMs: 100, probes: 1 } });
    await runDeferred(deps, counters, w, T0);
    dropDeferred(deps, w);
    expect({ closed: closed.sort(), fds: waitFds(w) }).toEqual({
      closed: [60, ...pod.released.filter((fd) => fd !== 60)].sort(),
      fds: [],
    });
  });

  it('does not probe without conflictCheck', async () => {
    await runDeferred(deps, counters, waiting(), T0);
    expect(pod.probes).toBe(0);
  });
});

describe('dropDeferred', () => {
  it("closes the wait's session (its packet socket in the background) once, and keeps waiting", async () => {
    const w = waiting();
    pod.links = [link({ up: false })];
    await runDeferred(deps, counters, w, T0);
    dropDeferred(deps, w);
    dropDeferred(deps, w);
    expect({ open: pod.open, closed, deferred: w.deferred }).toEqual({
      open: 0,
      closed: pod.released,
      deferred: { checkAt: T0 + 500, open: undefined },
    });
    expect(closed).toHaveLength(1);
  });
});
