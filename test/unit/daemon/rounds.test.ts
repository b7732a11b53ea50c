// One attachment's rounds in the table (src/daemon/rounds.ts), driven through the table as the loop drives it: a later
// round takes its frames from the budget first, then the pod's sockets, one round, the sockets closed (held back,
// dropped, skipped, failed); a deferred round 1 keeps one session open until the pod is ready, the budget delays it but
// never drops it, and the wait ends when the pod goes or never becomes ready.
import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BackgroundJob } from '../../../src/announce/background-job';
import { LATE_GRACE_MS, nextRound } from '../../../src/daemon/rounds';
import { gratuitousArp } from '../../../src/wire/arp';
import { link, TableWorld } from '../../support/daemon-fakes';
import { fakeLibc } from '../../support/fake-libc';

let w: TableWorld;
beforeEach(() => {
  w = new TableWorld();
});
afterEach(() => w.state.remove());

const why = (): unknown[] => w.logged('background work ended').map((r) => r.fields.why);
const next = (): number | undefined => w.status()[0]?.nextRoundInMs;

describe('nextRound', () => {
  const SCHEDULE = [0, 1000, 2000, 4000];
  it.each([
    ['starts at round 2 (index 1): ADD sent round 1', 0, 10_000, { index: 1, dueAt: 11_000, skipped: 0 }],
    ['sends a round late by at most the grace', 1, 11_000 + LATE_GRACE_MS, { index: 1, dueAt: 11_000, skipped: 0 }],
    ['skips rounds whose time has passed, never late in a burst', 1, 13_500, { index: 3, dueAt: 14_000, skipped: 2 }],
    ['says the burst is over when no round is left', 4, 10_000, { index: 4, dueAt: undefined, skipped: 0 }],
    ['says the burst is over when every round left passed', 1, 60_000, { index: 4, dueAt: undefined, skipped: 3 }],
  ])('%s', (_, from, now, expected) => {
    expect(nextRound(SCHEDULE, 10_000, from, now)).toEqual(expected);
  });
});

describe('a later round', () => {
  const title =
    'takes the planned frames from the budget, then sends the round, closes the session (packet socket in the ' +
    'background) and moves to the next round; the last one ends the work';
  it(title, async () => {
    w.add(w.sentAgo(0, { arpOps: ['request', 'reply'] }));
    await w.at(1000);
    expect(w.a.budget.calls).toEqual([{ rounds: 'later', frames: 2, onCredit: false, at: w.now() }]);
    expect(w.pod.sent.map((f) => f.readUInt16BE(20))).toEqual([1, 2]); // a GARP request, a GARP reply
    expect(w.a.counters).toMatchObject({ frames: { garpRequest: 1, garpReply: 1, na: 0 }, rounds: { sent: 1 } });
    expect(w.status()).toMatchObject([{ nextRoundInMs: 2000, roundsSent: 2 }]);
    expect({ open: w.pod.open, closed: w.closed }).toEqual({ open: 0, closed: w.pod.released });
    expect(w.logged('announced')).toMatchObject([{ level: 'info', fields: { round: 2, of: 3, frames: 2 } }]);
    await w.at(3000);
    expect({ size: w.a.jobs.size, sent: w.pod.sent.length, why: why() }).toEqual({ size: 0, sent: 4, why: [] });
  });

  it('plans every IPv4 address once per ARP op and every IPv6 address once', async () => {
    const interfaces = [
      { name: 'eth0', ipv4: ['10.0.0.1', '10.0.0.2'], ipv6: ['fd00::1'] },
      { name: 'net1', ipv4: ['10.1.0.1'], ipv6: ['fd01::1', 'fd01::2'] },
    ];
    w.add(w.sentAgo(0, { arpOps: ['request', 'reply'], interfaces }));
    w.a.budget.answers.push(100);
    await w.at(1000);
    expect(w.a.budget.calls.map((c) => c.frames)).toEqual([2 * 2 + 1 + 1 * 2 + 2]);
  });

  it('asks whether its pod is still there only once the budget lets the round go', async () => {
    w.add(w.sentAgo(0));
    w.a.budget.answers.push(200);
    rmSync(w.state.netns);
    await w.at(1000);
    expect([w.a.jobs.size, why()]).toEqual([1, []]); // held back: no stat of the netns path
    await w.at(1200);
    const got = { why: why(), opened: w.pod.opened, sent: w.pod.sent.length };
    expect(got).toEqual({ why: ['pod gone or work ended'], opened: 0, sent: 0 });
  });

  const heldTitle =
    'held back by the budget: opens no socket and closes none, waits the time the budget says, counted as delayed ' +
    'once; then goes out, and a later hold-back counts again';
  it(heldTitle, async () => {
    w.add(w.sentAgo(0));
    w.a.budget.answers.push(200, 150);
    await w.at(1000);
    expect(w.wakeIn()).toBe(200);
    await w.at(1200);
    const got = { opened: w.pod.opened, closed: w.closed, sent: w.pod.sent.length, next: next() };
    expect(got).toEqual({ opened: 0, closed: [], sent: 0, next: 150 });
    expect(w.a.counters.rateLimited).toEqual({ delayed: 1, dropped: 0 });
    await w.at(1350);
    expect([w.pod.sent.length, next()]).toEqual([1, 1650]);
    w.a.budget.answers.push(100);
    await w.at(3000);
    expect(w.a.counters.rateLimited).toEqual({ delayed: 2, dropped: 0 });
  });

  it.each([
    { title: 'once the wait would reach the next round', waits: [1999, 1], at: [1000, 2999], delayed: 1 },
    { title: 'at once when the wait it is told reaches the next round', waits: [2000], at: [1000], delayed: 0 },
  ])('is dropped $title, and the next round keeps its time', async ({ waits, at, delayed }) => {
    w.add(w.sentAgo(0));
    w.a.budget.answers.push(...waits);
    for (const t of at) await w.at(t);
    expect({ next: next(), opened: w.pod.opened }).toEqual({ next: 3000 - at.at(-1)!, opened: 0 });
    expect(w.a.counters).toMatchObject({ rateLimited: { delayed, dropped: 1 }, rounds: { skippedLate: 0 } });
    const dropped = 'round dropped: the node-wide rate limit held it until the next one was due';
    expect(w.logged(dropped)).toMatchObject([{ level: 'warn', fields: { round: 2 } }]);
  });

  it('never drops the last round for the budget: it waits however long', async () => {
    w.add(w.sentAgo(0));
    await w.at(1000);
    w.a.budget.answers.push(60_000);
    await w.at(3000);
    expect([next(), w.a.counters.rateLimited.dropped]).toEqual([60_000, 0]);
  });

  it('skips the round of a pod not ready for it, and moves on', async () => {
    w.add(w.sentAgo(0));
    w.pod.links = [link({ up: false })];
    await w.at(1000);
    const got = { sent: w.pod.sent.length, skipped: w.a.counters.rounds.skippedNotReady, status: w.status() };
    expect(got).toMatchObject({ sent: 0, skipped: 1, status: [{ roundsSent: 1, nextRoundInMs: 2000 }] });
    expect({ open: w.pod.open, closed: w.closed.length }).toEqual({ open: 0, closed: 1 });
    expect(w.logged('pod not ready for this round: skipping it')).toMatchObject([{ fields: { round: 2 } }]);
  });

  it(
    'ends the work when the interface is gone (at open, or ' + 'between open and look) or the netns cannot be entered',
    async () => {
      w.add(w.sentAgo(0));
      w.pod.links = [link({ name: 'eth1' })];
      await w.at(1000);
      w.add(w.sentAgo(0)); // round 2 at 2000
      w.pod.links = [link()];
      const opener = w.pod.opener();
      w.a.open = {
        ...opener,
        pod: (netns) => {
          const sockets = opener.pod(netns);
          sockets.rtnl.linkByIndex = () => undefined;
          return sockets;
        },
      };
      await w.at(2000);
      w.add(w.sentAgo(0));
      w.pod.openError = new Error('ENOENT');
      await w.at(3000);
      expect(why()).toEqual(['pod interface eth0 gone', 'pod interface eth0 gone', 'cannot enter pod netns: ENOENT']);
      expect({ open: w.pod.open, closed: w.closed.length }).toEqual({ open: 0, closed: 2 });
    },
  );

  it('counts a round that throws as an error, closes the session and moves on', async () => {
    const opener = w.pod.opener();
    w.a.open = {
      ...opener,
      pod: (netns) => ({
        ...opener.pod(netns),
        get ipv6Forwarding(): boolean {
          throw new Error('boom');
        },
      }),
    };
    w.add(w.sentAgo(0));
    await w.at(1000);
    const got = { errors: w.a.counters.errors, next: next(), open: w.pod.open, closed: w.closed.length };
    expect(got).toEqual({ errors: 1, next: 2000, open: 0, closed: 1 });
    expect(w.logged('round failed')).toMatchObject([{ level: 'error', fields: { round: 2, error: 'boom' } }]);
  });
});

describe('a deferred round 1', () => {
  const DEADLINE = 10_000;
  /** Frames sent that announce (a probe's sender IP is 0.0.0.0). */
  const announced = (): number => w.pod.sent.filter((f) => f.readUInt32BE(28) !== 0).length;
  const waiting = (extra: Partial<BackgroundJob> = {}) => w.add(w.waiting(extra));

  const title =
    'sends round 1 once the pod is ready (drawn from the budget of later rounds), closes the wait, and schedules ' +
    'round 2 from then';
  it(title, async () => {
    waiting();
    await w.at(700);
    expect(w.a.budget.calls).toEqual([{ rounds: 'later', frames: 1, onCredit: false, at: w.now() }]);
    expect(w.status()).toMatchObject([{ deferred: false, roundsSent: 1, nextRoundInMs: 1000 }]);
    expect(w.a.counters).toMatchObject({
      deferred: { started: 1, ready: 1, timedOut: 0, gone: 0 },
      rounds: { sent: 1 },
      frames: { garpRequest: 1 },
    });
    // No conflictCheck: no probe.
    const got = { sent: w.pod.sent.length, probes: w.pod.probes, open: w.pod.open, closed: w.closed };
    expect(got).toEqual({ sent: 1, probes: 0, open: 0, closed: w.pod.released });
    expect(w.logged('announced')).toMatchObject([{ fields: { round: 1, of: 3, frames: 1, deferred: true } }]);
  });

  it('ends the burst at once when the schedule has one round', async () => {
    waiting({ schedule: [0] });
    await w.at(0);
    expect([w.pod.sent.length, w.a.jobs.size]).toEqual([1, 0]);
  });

  const openTitle =
    'keeps one session open while the pod is not ready, looking again CHECK_MS later, or at once when its event ' +
    'sockets stir';
  it(openTitle, async () => {
    waiting();
    w.pod.links = [link({ running: false })];
    await w.at(0);
    await w.at(500);
    const { opened, open } = w.pod;
    const waitingOn = { opened, open, closed: w.closed, wake: w.wakeIn(), fds: w.a.jobs.eventFds() };
    expect(waitingOn).toEqual({ opened: 1, open: 1, closed: [], wake: 500, fds: [50, 51] });
    w.pod.links = [link()];
    await w.at(600); // not due, nothing stirred
    expect(w.pod.sent).toHaveLength(0);
    await w.at(800, [51]);
    const got = { opened: w.pod.opened, open: w.pod.open, sent: w.pod.sent.length, fds: w.a.jobs.eventFds() };
    expect(got).toEqual({ opened: 1, open: 0, sent: 1, fds: [] });
    expect(w.pod.drained).toBeGreaterThan(0);
    await w.at(1800);
    expect(w.pod.sent).toHaveLength(2);
  });

  it('gives up at the ready deadline, and not before', async () => {
    waiting();
    w.pod.links = [link({ up: false })];
    await w.at(DEADLINE - 1, [50]); // its event socket stirred: it looks
    expect(why()).toEqual([]);
    await w.at(DEADLINE, [50]);
    expect([why(), w.a.counters.deferred.timedOut]).toEqual([['ready timeout'], 1]);
    const never = w.logged('pod never became ready: not announcing');
    expect(never).toMatchObject([{ level: 'warn', fields: { waitingFor: expect.stringContaining('eth0 is down') } }]);
  });

  it('ends when the interface is gone (at open or later) or the netns cannot be entered, counted as gone', async () => {
    w.pod.links = [];
    waiting({ containerId: 'a' });
    await w.at(0);
    w.pod.links = [link({ up: false })];
    waiting({ containerId: 'b' });
    await w.at(0);
    w.pod.links = [link({ name: 'other' })];
    await w.at(500);
    w.pod.openError = new Error('EPERM');
    waiting({ containerId: 'c' });
    await w.at(500);
    expect(why()).toEqual(['pod interface eth0 gone', 'pod interface eth0 gone', 'cannot enter pod netns: EPERM']);
    expect(w.a.counters.deferred.gone).toBe(3);
  });

  const heldTitle =
    'held back by the budget: keeps its session, closes nothing, ' +
    'never dropped; at the ready deadline it goes on credit';
  it(heldTitle, async () => {
    waiting();
    w.a.budget.answers.push(200, 5000);
    await w.at(0);
    expect(w.wakeIn()).toBe(200);
    await w.at(200);
    expect(w.wakeIn()).toBe(500); // never longer than CHECK_MS
    const got = { opened: w.pod.opened, closed: w.closed, rateLimited: w.a.counters.rateLimited };
    expect(got).toEqual({ opened: 1, closed: [], rateLimited: { delayed: 1, dropped: 0 } });
    await w.at(DEADLINE);
    expect(w.a.budget.calls.map((c) => c.onCredit)).toEqual([false, false, true]);
    expect([w.pod.sent.length, w.status()[0]?.deferred]).toEqual([1, false]);
  });

  const failedProbeTitle =
    'probes for conflicts once per wait, not again when the budget holds round 1 back; a failed probe is counted and ' +
    'announces anyway';
  it(failedProbeTitle, async () => {
    waiting({ conflictCheck: { action: 'warn', probeMs: 100, probes: 1 } });
    w.a.budget.answers.push(100, 100);
    for (const t of [0, 100, 200]) await w.at(t);
    const got = { probes: w.pod.probes, errors: w.a.counters.errors, sent: w.pod.sent.length };
    expect(got).toEqual({ probes: 1, errors: 1, sent: 1 });
    const failed = w.logged('conflict probe failed: announcing without it');
    expect(failed).toMatchObject([{ level: 'error', fields: { error: 'no ARP receivers here' } }]);
  });

  const conflictTitle =
    'leaves out the addresses another host answers for, in round 1 and the rounds after, counted and logged; the ' +
    'probe receivers close in the background';
  it.each(['warn', 'fail'] as const)(`${conflictTitle} (conflictCheck %s)`, async (action) => {
    const other = Buffer.from('02aabbccddee', 'hex');
    w.pod.arpFrames = [gratuitousArp({ mac: other, ip: Buffer.from([10, 88, 0, 5]), op: 'reply' })];
    w.a.libc = fakeLibc({ pollIn: (fds, ms) => (w.timers.advance(ms), fds.map(() => true)) });
    waiting({ conflictCheck: { action, probeMs: 100, probes: 1 } });
    w.a.budget.answers.push(50);
    await w.at(0);
    expect({ sent: announced(), conflicts: w.a.counters.conflicts }).toEqual({ sent: 0, conflicts: 1 });
    // Held back, round 1 comes again: no second probe, still without the address.
    await w.at(50);
    const got = { probes: w.pod.probes, sent: announced(), conflicts: w.a.counters.conflicts };
    expect(got).toEqual({ probes: 1, sent: 0, conflicts: 1 });
    expect(w.a.jobs.progress().get('c1@eth0.json')?.job.interfaces).toEqual([{ name: 'eth0', ipv4: [], ipv6: [] }]);
    expect(w.closed).toContain(60);
    const conflict = w.a.records().filter((r) => r.msg.startsWith('address conflict: not announcing 10.88.0.5 is'));
    expect(conflict).toMatchObject([
      { level: 'warn', fields: { address: '10.88.0.5', mac: '02:aa:bb:cc:dd:ee', interface: 'eth0' } },
    ]);
    const leftOut = w.logged('conflictCheck is fail, but ADD has returned: leaving the addresses out instead');
    expect(leftOut).toHaveLength(action === 'fail' ? 1 : 0);
  });

  const stepsTitle =
    'probes in steps without waiting (receivers polled with timeout 0), then announces everything when the window ' +
    'found no conflict';
  it(stepsTitle, async () => {
    w.pod.arpFrames = [];
    const timeouts: number[] = [];
    w.a.libc = fakeLibc({ pollIn: (fds, ms) => (timeouts.push(ms), fds.map(() => false)) });
    waiting({ conflictCheck: { action: 'warn', probeMs: 100, probes: 2 } });
    await w.at(0);
    // The first probe is out, round 1 is not; the wait comes back at the second probe, its receiver polled with the
    // pod's event sockets.
    const got = { probes: w.pod.sent.length, sent: announced(), wake: w.wakeIn(), fds: w.a.jobs.eventFds() };
    expect(got).toEqual({ probes: 1, sent: 0, wake: 50, fds: [50, 51, 60] });
    await w.at(50);
    const later = { probes: w.pod.sent.length, wake: w.wakeIn(), closed: w.closed };
    expect(later).toEqual({ probes: 2, wake: 50, closed: [] });
    await w.at(100);
    const { conflicts, errors } = w.a.counters;
    const last = { receivers: w.pod.probes, sent: announced(), conflicts, errors };
    expect(last).toEqual({ receivers: 1, sent: 1, conflicts: 0, errors: 0 });
    expect(timeouts.every((ms) => ms === 0)).toBe(true);
    expect(w.closed).toContain(60);
  });

  it('gives up an unfinished probe window with the wait (cancel): its receivers are handed off', async () => {
    w.pod.arpFrames = [];
    w.a.libc = fakeLibc({ pollIn: (fds) => fds.map(() => false) });
    const name = w.add(w.waiting({ conflictCheck: { action: 'warn', probeMs: 100, probes: 1 } }));
    await w.at(0);
    w.a.jobs.cancel(name);
    const got = { closed: w.closed.sort(), fds: w.a.jobs.eventFds(), open: w.pod.open };
    expect(got).toEqual({ closed: [60, ...w.pod.released.filter((fd) => fd !== 60)].sort(), fds: [], open: 0 });
  });
});
