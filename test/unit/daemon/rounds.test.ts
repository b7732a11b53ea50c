// A later round of one attachment: the budget first, then the pod's sockets,
// one round, the sockets closed; held back, dropped, skipped, failed.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BackgroundJob } from '../../../src/announce/background-job';
import { newCounters, type Counters } from '../../../src/daemon/counters';
import { plannedFrames, runRound, type RoundDeps, type Work } from '../../../src/daemon/rounds';
import { fakeLibc } from '../../support/fake-libc';
import { FakePod, jobIn, keptLog, link, makeStateDir, ScriptedBudget, type StateDir } from '../../support/daemon-fakes';
import { ManualTimers } from '../../support/manual-timers';
import { identityViews } from '../../support/caller-view-fakes';

const T1 = 1_000_000; // boot ms of round 1

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
  const timers = new ManualTimers();
  deps = {
    libc: fakeLibc({}),
    open: pod.opener(),
    closeInBackground: (fd) => void closed.push(fd),
    timers,
    budget: budget.budget,
    views: identityViews,
  };
});
afterEach(() => state.remove());

function work(extra: Partial<BackgroundJob> = {}, next = 1): Work {
  const job = jobIn(state, extra);
  const kept = keptLog();
  lines = kept.lines;
  return {
    name: 'c1@eth0.json',
    job,
    originalMacs: [],
    log: kept.log,
    firstRoundAt: T1,
    next,
    dueAt: T1 + job.schedule[next]!,
    roundsSent: next,
    delayed: false,
  };
}

describe('runRound', () => {
  const takesPlannedFramesTitle =
    'takes the planned frames from the budget, then sends the round, closes the session ' +
    '(packet socket in the background) and moves to the next round';
  it(takesPlannedFramesTitle, async () => {
    budget.limit = { framesPerSecond: 20, burst: 5 };
    const w = work();
    expect(await runRound(deps, counters, w, T1 + 1000)).toBeUndefined();
    expect(budget.calls).toEqual([
      { limit: { framesPerSecond: 20, burst: 5 }, frames: 1, onCredit: false, at: 1_000_000 },
    ]); // the boot clock
    expect(pod.sent).toHaveLength(1);
    expect(pod.sent[0]!.readUInt16BE(20)).toBe(1); // a GARP request
    expect(counters.frames).toEqual({ garpRequest: 1, garpReply: 0, na: 0 });
    expect(counters.rounds.sent).toBe(1);
    expect({ next: w.next, dueAt: w.dueAt, roundsSent: w.roundsSent }).toEqual({
      next: 2,
      dueAt: T1 + 3000,
      roundsSent: 2,
    });
    expect({ open: pod.open, closed }).toEqual({ open: 0, closed: pod.released });
    expect(lines.some((l) => l.includes('INFO announced round=2 of=3 frames=1'))).toBe(true);
  });

  it('ends the work after the last round', async () => {
    const w = work({ arpOps: ['request', 'reply'] }, 2);
    expect(await runRound(deps, counters, w, T1 + 3000)).toEqual({ why: undefined });
    expect(counters.frames).toEqual({ garpRequest: 1, garpReply: 1, na: 0 });
    expect({ next: w.next, dueAt: w.dueAt }).toEqual({ next: 3, dueAt: undefined });
  });

  it('asks whether the work and its pod are still there only once the budget lets the round go', async () => {
    const w = work();
    const asked: number[] = [];
    budget.answers.push(200);
    expect(await runRound(deps, counters, w, T1 + 1000, () => (asked.push(1), false))).toBeUndefined();
    expect(asked).toEqual([]); // held back: no stat of the netns path
    expect(await runRound(deps, counters, w, T1 + 1200, () => (asked.push(2), false))).toEqual({
      why: 'pod gone or work ended',
    });
    expect({ asked, opened: pod.opened, sent: pod.sent.length }).toEqual({ asked: [2], opened: 0, sent: 0 });
  });

  const heldBackByTitle =
    'held back by the budget: opens no socket and closes none, waits the ' +
    'time the budget says, counted as delayed once';
  it(heldBackByTitle, async () => {
    const w = work();
    budget.answers.push(200, 150);
    expect(await runRound(deps, counters, w, T1 + 1000)).toBeUndefined();
    expect(await runRound(deps, counters, w, T1 + 1200)).toBeUndefined();
    expect({ opened: pod.opened, closed, sent: pod.sent.length }).toEqual({ opened: 0, closed: [], sent: 0 });
    expect({ next: w.next, dueAt: w.dueAt, delayed: w.delayed }).toEqual({ next: 1, dueAt: T1 + 1350, delayed: true });
    expect(counters.rateLimited).toEqual({ delayed: 1, dropped: 0 });
    // Then the budget has the frames: the round goes out, and a later hold-back counts again.
    expect(await runRound(deps, counters, w, T1 + 1350)).toBeUndefined();
    expect({ sent: pod.sent.length, next: w.next, delayed: w.delayed }).toEqual({ sent: 1, next: 2, delayed: false });
    budget.answers.push(100);
    await runRound(deps, counters, w, T1 + 3000);
    expect(counters.rateLimited).toEqual({ delayed: 2, dropped: 0 });
  });

  it('drops a held-back round once the wait would reach the next round, and moves to that one', async () => {
    const w = work();
    budget.answers.push(1999);
    await runRound(deps, counters, w, T1 + 1000);
    expect({ next: w.next, dueAt: w.dueAt }).toEqual({ next: 1, dueAt: T1 + 2999 });
    budget.answers.push(1);
    expect(await runRound(deps, counters, w, T1 + 2999)).toBeUndefined();
    expect({ next: w.next, dueAt: w.dueAt, delayed: w.delayed }).toEqual({ next: 2, dueAt: T1 + 3000, delayed: false });
    expect(counters.rateLimited).toEqual({ delayed: 1, dropped: 1 });
    expect(pod.opened).toBe(0);
    expect(lines.some((l) => l.includes('round dropped') && l.includes('round=2'))).toBe(true);
  });

  const dropsRoundAtTitle =
    'drops a round at once when the wait it is told reaches the next round, and the next round keeps its time';
  it(dropsRoundAtTitle, async () => {
    const w = work();
    budget.answers.push(2000);
    expect(await runRound(deps, counters, w, T1 + 1000)).toBeUndefined();
    expect({
      next: w.next,
      dueAt: w.dueAt,
      dropped: counters.rateLimited.dropped,
      skippedLate: counters.rounds.skippedLate,
    }).toEqual({ next: 2, dueAt: T1 + 3000, dropped: 1, skippedLate: 0 });
  });

  it('never drops the last round for the budget: it waits however long', async () => {
    const w = work({}, 2);
    budget.answers.push(60_000);
    expect(await runRound(deps, counters, w, T1 + 3000)).toBeUndefined();
    expect({ next: w.next, dueAt: w.dueAt }).toEqual({ next: 2, dueAt: T1 + 63_000 });
    expect(counters.rateLimited.dropped).toBe(0);
  });

  it('skips the round of a pod not ready for it, and moves on', async () => {
    const w = work();
    pod.links = [link({ up: false })];
    expect(await runRound(deps, counters, w, T1 + 1000)).toBeUndefined();
    expect({
      sent: pod.sent.length,
      skipped: counters.rounds.skippedNotReady,
      roundsSent: w.roundsSent,
      next: w.next,
    }).toEqual({ sent: 0, skipped: 1, roundsSent: 1, next: 2 });
    expect({ open: pod.open, closed: closed.length }).toEqual({ open: 0, closed: 1 });
  });

  it('skips rounds whose time has passed after a late one', async () => {
    const w = work();
    expect(await runRound(deps, counters, w, T1 + 4001)).toEqual({ why: undefined });
    expect(counters.rounds).toEqual({ sent: 1, skippedNotReady: 0, skippedLate: 1 });
    expect(lines.some((l) => l.includes('rounds skipped') && l.includes('skipped=1'))).toBe(true);
  });

  it('keeps a round due a grace second ago', async () => {
    const w = work();
    await runRound(deps, counters, w, T1 + 4000);
    expect({ next: w.next, skippedLate: counters.rounds.skippedLate }).toEqual({ next: 2, skippedLate: 0 });
  });

  it('ends the work when the interface is gone, or the netns cannot be entered', async () => {
    pod.links = [link({ name: 'eth1' })];
    expect(await runRound(deps, counters, work(), T1 + 1000)).toEqual({ why: 'pod interface eth0 gone' });
    expect({ open: pod.open, closed: closed.length }).toEqual({ open: 0, closed: 1 });
    pod.links = [link({ index: 2 })];
    pod.openError = new Error('ENOENT');
    expect(await runRound(deps, counters, work(), T1 + 1000)).toEqual({ why: 'cannot enter pod netns: ENOENT' });
  });

  it('ends the work when the interface disappears between open and look', async () => {
    const opener = pod.opener();
    let calls = 0;
    deps.open = {
      ...opener,
      pod: (netns) => {
        const sockets = opener.pod(netns);
        const byIndex = sockets.rtnl.linkByIndex.bind(sockets.rtnl);
        sockets.rtnl.linkByIndex = (i: number) => (++calls > 0 ? undefined : byIndex(i));
        return sockets;
      },
    };
    expect(await runRound(deps, counters, work(), T1 + 1000)).toEqual({ why: 'pod interface eth0 gone' });
    expect(pod.open).toBe(0);
  });

  it('counts a round that throws as an error, closes the session and moves on', async () => {
    const opener = pod.opener();
    deps.open = {
      ...opener,
      pod: (netns) => ({
        ...opener.pod(netns),
        get ipv6Forwarding(): boolean {
          throw new Error('boom');
        },
      }),
    };
    const w = work();
    expect(await runRound(deps, counters, w, T1 + 1000)).toBeUndefined();
    expect({ errors: counters.errors, next: w.next, open: pod.open, closed: closed.length }).toEqual({
      errors: 1,
      next: 2,
      open: 0,
      closed: 1,
    });
    expect(lines.some((l) => l.includes('round failed') && l.includes('boom'))).toBe(true);
  });
});

describe('plannedFrames', () => {
  it('counts every IPv4 address once per ARP op and every IPv6 address once', () => {
    const job = jobIn(state, {
      arpOps: ['request', 'reply'],
      interfaces: [
        { name: 'eth0', ipv4: ['10.0.0.1', '10.0.0.2'], ipv6: ['fd00::1'] },
        { name: 'net1', ipv4: ['10.1.0.1'], ipv6: ['fd01::1', 'fd01::2'] },
      ],
    });
    expect(plannedFrames(job)).toBe(2 * 2 + 1 + 1 * 2 + 2);
  });
});
