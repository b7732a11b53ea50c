// The announcer's loop end to end through fakes (test/support/daemon-loop.ts):
// the schedule from the records, jobs hosted commands hand over in memory, the
// retired ops refused, the node settings (never a job's or a request's), idle
// exit, signals, the lock.
import { existsSync, fstatSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { STAMP_MS } from '../../../src/daemon/stamper';
import { ANNOUNCER_SOCKET } from '../../../src/state-files';
import { isResidentLock, jobRecord, writeJob } from '../../support/daemon-fakes';
import { answerOf, BUILD, countersOf, DaemonLoop } from '../../support/daemon-loop';
import { cniLine } from '../../support/wire-client';

let d: DaemonLoop;
beforeEach(() => {
  d = new DaemonLoop();
});
afterEach(() => d.state.remove());

describe('runDaemon: the schedule and the control requests', () => {
  const takesUpJobsTitle =
    'takes up the jobs of the records, sends their rounds at their offsets, and exits idle, its socket removed';
  it(takesUpJobsTitle, async () => {
    writeJob(d.state, d.sentAt(0));
    const status = d.controlAt(1500, { op: 'status' });
    await d.run();
    expect(d.pod.sent).toHaveLength(2);
    expect(d.timers.now()).toBeGreaterThanOrEqual(3000 + 1000);
    expect(d.timers.now()).toBeLessThan(3000 + 1000 + 600);
    expect(countersOf(status).rounds.sent).toBe(1);
    expect(answerOf(status)).toMatchObject({
      ok: true,
      status: { attachments: [{ containerId: 'c1', nextRoundInMs: 1500, roundsSent: 2 }] },
    });
    expect(d.sockets.paths).toEqual([]);
    expect(existsSync(join(d.state.dir, ANNOUNCER_SOCKET))).toBe(false);
    expect(d.logged('announcer started').filter((l) => l.includes('pending=1') && l.includes('build=b1'))).toHaveLength(
      1,
    );
    expect(d.lines.at(-1)).toContain('announcer stopped');
  });

  it('says it is ready once, when its socket listens and before it reads the records (--ready-fd)', async () => {
    writeJob(d.state, d.sentAt(0));
    const ready: { paths: string[]; lines: number }[] = [];
    d.deps.ready = () => void ready.push({ paths: d.sockets.paths, lines: d.logged('announcer started').length });
    await d.run();
    expect(ready).toEqual([{ paths: [join(d.state.dir, ANNOUNCER_SOCKET)], lines: 0 }]);
  });

  const stampsItsProgressTitle =
    'stamps its progress on the lock fd it holds at its first turn, then at most once per STAMP_MS while it turns';
  it(stampsItsProgressTitle, async () => {
    writeJob(d.state, d.sentAt(0)); // rounds at 1000 and 2000, then idleExitMs: the loop turns for 3 s at least
    await d.run();
    const at = d.stamps.map((s) => s.at);
    expect(at[0]).toBeLessThan(STAMP_MS);
    expect(at.length).toBeGreaterThanOrEqual(Math.floor(d.timers.now() / 2 / STAMP_MS));
    for (let i = 1; i < at.length; i++) {
      expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(STAMP_MS);
      expect(at[i]! - at[i - 1]!).toBeLessThan(2 * STAMP_MS);
    }
    expect(new Set(d.stamps.map((s) => s.fd)).size).toBe(1);
  });

  const hostedADDHandsTitle =
    'a hosted ADD hands its job to the table in memory, counting round 1 and its conflicts, and the ' +
    "node's metricsFile is written; a hosted DEL cancels it: nothing sent after";
  it(hostedADDHandsTitle, async () => {
    Object.assign(d.deps.settings, { idleExitMs: 200, metricsFile: '/m.prom' });
    const job = d.sentAt(100);
    d.runner = async (env, _stdin, host) => {
      const table = host.jobHost(d.timers.bootMs());
      if (env.CNI_COMMAND === 'DEL') table.cancel('c1@eth0.json');
      else {
        writeJob(d.state, job); // ADD writes the record (the journal), then hands the job over
        table.added('c1@eth0.json', jobRecord(job), {
          sent: { garpRequest: 1, garpReply: 0, na: 0 },
          conflicts: 2,
        });
      }
      return { exit: 0, stdout: '' };
    };
    d.cniAt(100);
    d.lineAt(1150, (ackBy) => cniLine({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c1' }, d.stdin(), ackBy, BUILD));
    const status = d.controlAt(1200, { op: 'status' });
    await d.run();
    expect(d.pod.sent).toHaveLength(1); // round 2 at 1100; round 3 (3100) cancelled
    expect(countersOf(status)).toMatchObject({ frames: { garpRequest: 2 }, rounds: { sent: 2 }, conflicts: 2 });
    expect(d.timers.now()).toBeLessThan(1200 + 1000); // idleExitMs 200 of the node settings
    expect(d.metrics.at(-1)).toMatchObject({ file: '/m.prom' });
    expect(d.metrics.at(-1)!.text).toContain('cni_announcer_frames_sent_total{kind="garp_request"} 2');
  });

  const refusesByNameTitle =
    'refuses by name the ops of an older in-process shim (sync, count, cancel): nothing counted, nothing taken up';
  it(refusesByNameTitle, async () => {
    d.deps.settings.idleExitMs = 100;
    writeJob(d.state, d.sentAt(0, { containerId: 'late', schedule: [0, 60_000] }));
    const counted = d.controlAt(0, { op: 'count', sent: { garpRequest: 0, garpReply: 1, na: 2 }, conflicts: 1 });
    const synced = d.controlAt(5, { op: 'sync', record: 'c9@eth0.json', sent: { garpRequest: 1 } });
    const cancelled = d.controlAt(8, { op: 'cancel', record: 'late@eth0.json' });
    const garbage = d.lineAt(10, () => 'not json\n');
    const status = d.controlAt(20, { op: 'status' });
    await d.run();
    for (const [slot, op] of [
      [counted, 'count'],
      [synced, 'sync'],
      [cancelled, 'cancel'],
    ] as const) {
      expect(answerOf(slot)).toEqual({
        ok: false,
        error: expect.stringMatching(new RegExp(`^op "${op}" is retired: `)),
      });
    }
    expect(garbage.client!.lines()).toEqual([{ refused: 'not JSON' }]);
    expect(countersOf(status)).toMatchObject({ frames: { garpRequest: 0, garpReply: 0, na: 0 }, conflicts: 0 });
    expect(countersOf(status).errors).toBe(0);
    expect(answerOf(status)).toMatchObject({ status: { attachments: [{ containerId: 'late' }] } }); // not cancelled
  });

  const rateLimitHeldTitle =
    'rate limit: a held-back round goes out when the budget says, holding no socket ' +
    'meanwhile; one held past the next round is dropped and counted';
  it(rateLimitHeldTitle, async () => {
    d.budget.limit = { framesPerSecond: 20, burst: 5 };
    writeJob(d.state, d.sentAt(0, { schedule: [0, 1000, 3000, 3500] }));
    d.budget.answers.push(300, 'ok', 800); // round 2 waits 300 ms; round 3 would wait past round 4
    const polls: number[] = [];
    d.poll.at(1001, () => void polls.push(d.pod.sent.length, d.pod.open));
    const status = d.controlAt(3600, { op: 'status' });
    await d.run();
    expect(d.budget.calls.map((c) => c.at)).toEqual([1_001_000, 1_001_300, 1_003_000, 1_003_500]);
    expect(polls).toEqual([0, 0]); // held back: nothing sent, no pod socket open
    expect(d.pod.sent).toHaveLength(2); // rounds 2 and 4
    expect(d.pod.opened).toBe(2);
    expect(countersOf(status).rateLimited).toEqual({ delayed: 1, dropped: 1 });
  });

  it('counts a round only when the ADD sent frames', async () => {
    d.deps.settings.idleExitMs = 100;
    d.controlAt(0, { op: 'status' });
    const status = d.controlAt(10, { op: 'status' });
    await d.run();
    expect(countersOf(status).rounds.sent).toBe(0);
  });

  const idlesOutAfterTitle =
    "idles out after the node settings' idleExitMs; a record written before node settings does not change it";
  it(idlesOutAfterTitle, async () => {
    d.deps.settings.idleExitMs = 30_000;
    const legacy = { ...d.sentAt(0, { schedule: [0] }), idleExitMs: 100, metricsFile: '/m.prom' };
    writeJob(d.state, legacy);
    await d.run();
    expect(d.timers.now()).toBeGreaterThanOrEqual(30_000);
    expect(d.timers.now()).toBeLessThan(30_600);
    expect(d.metrics).toEqual([]);
  });

  it('exits idle without reading the records again: it is their only writer', async () => {
    d.deps.settings.idleExitMs = 1000;
    d.controlAt(0, { op: 'status' });
    d.poll.at(999, () => void writeJob(d.state, d.sentAt(0))); // no command of this announcer wrote it
    await d.run();
    expect(d.pod.sent).toHaveLength(0);
    expect(d.timers.now()).toBeLessThan(1500);
  });

  it('stays while a client is connected, and idles out idleExitMs after the last work ended', async () => {
    d.deps.settings.idleExitMs = 1000;
    d.controlAt(0, { op: 'status' });
    d.lineAt(900, () => Buffer.alloc(0)); // says nothing: dropped at 1900
    await d.run();
    expect(d.timers.now()).toBeGreaterThanOrEqual(2900);
    expect(d.timers.now()).toBeLessThan(3500);
  });

  it('SIGTERM stops it after the turn; SIGINT too; both handlers are gone afterwards', async () => {
    const before = [process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')];
    writeJob(d.state, d.sentAt(0, { schedule: [0, 1000, 60_000] }));
    d.signalAt(1500, 'SIGTERM');
    await d.run();
    expect(d.timers.now()).toBeLessThan(3000);
    expect(d.pod.sent).toHaveLength(1);
    d.signalAt(d.timers.now() + 500, 'SIGINT');
    const stoppedAt = d.timers.now();
    await d.run();
    expect(d.timers.now() - stoppedAt).toBeLessThan(1100);
    expect([process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')]).toEqual(before);
  });

  const returnsWithoutRunningTitle =
    'returns without running while another announcer holds the lock, after ' +
    'waiting LOCK_WAIT_MS (5 s) for it to let go';
  it(returnsWithoutRunningTitle, async () => {
    d.timers.advance(5000);
    d.deps.tryLock = (fd) => isResidentLock(fd); // no resident one; the announcer lock held
    const waits: number[] = [];
    // The holder never exits: each poll on it lasts its whole time.
    d.deps.waitForHolder = (_fd, ms) => (waits.push(ms), d.timers.advance(ms), 'holder');
    writeJob(d.state, d.sentAt(0));
    await d.run();
    expect({
      sent: d.pod.sent.length,
      polls: d.poll.calls.length,
      paths: d.sockets.paths,
      now: d.timers.now(),
      waits,
    }).toEqual({ sent: 0, polls: 0, paths: [], now: 10_000, waits: [5000] });
  });

  const returnsAtOnceTitle =
    'returns at once, without running, when the announcer holding the lock listens (two shims started one each)';
  it(returnsAtOnceTitle, async () => {
    d.timers.advance(5000);
    d.deps.tryLock = (fd) => isResidentLock(fd);
    const serving = d.sockets.listen(join(d.state.dir, ANNOUNCER_SOCKET));
    writeJob(d.state, d.sentAt(0));
    await d.run();
    expect({ sent: d.pod.sent.length, polls: d.poll.calls.length, now: d.timers.now() }).toEqual({
      sent: 0,
      polls: 0,
      now: 5000,
    });
    expect(d.sockets.paths).toEqual([join(d.state.dir, ANNOUNCER_SOCKET)]); // the other's, left alone
    d.sockets.close(serving);
  });

  it('takes the lock on the lock file in stateDir, and closes it on return', async () => {
    const locked: number[] = [];
    d.deps.tryLock = (fd) => (isResidentLock(fd) || locked.push(fd), true);
    d.deps.settings.idleExitMs = 100;
    d.controlAt(0, { op: 'status' });
    await d.run();
    expect(locked).toHaveLength(1);
    expect(() => fstatSync(locked[0]!)).toThrow(/EBADF/);
    expect(existsSync(join(d.state.dir, 'announcer-daemon.flock'))).toBe(true);
  });

  it('removes the start marker once listening', async () => {
    const marker = join(d.state.dir, 'announcer-start.marker');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(marker, '');
    let listeningWhenRemoved: boolean | undefined;
    d.poll.at(0, () => (listeningWhenRemoved = d.sockets.paths.length === 1 && !existsSync(marker)));
    d.deps.settings.idleExitMs = 100;
    d.controlAt(0, { op: 'status' });
    await d.run();
    expect(listeningWhenRemoved).toBe(true);
  });

  it("removes an older version's frame budget files when it starts: the budget is in its memory now", async () => {
    const { writeFileSync } = await import('node:fs');
    const legacy = ['rate-limit.bucket', 'rate-limit.bucket.flock'].map((f) => join(d.state.dir, f));
    for (const file of legacy) writeFileSync(file, '{"tokens":0,"atMs":0}');
    let goneWhenListening: boolean | undefined;
    d.poll.at(0, () => (goneWhenListening = legacy.every((f) => !existsSync(f))));
    d.controlAt(0, { op: 'status' });
    await d.run();
    expect(goneWhenListening).toBe(true);
  });

  const strayTitle =
    'looks for a thread born inside a pod netns only after a turn that entered one; finding one, says so (error) and ' +
    'hands over to a fresh announcer, the burst written for it';
  it(strayTitle, async () => {
    d.deps.settings.idleExitMs = 60_000;
    writeJob(d.state, d.sentAt(0, { schedule: [0, 1000, 3000] }));
    d.controlAt(500, { op: 'status' });
    d.poll.at(900, () => void (d.strayThreads = [{ tid: 4321, comm: 'HeapHelper' }]));
    await d.run();
    expect(d.threadLooks).toBe(1); // only after round 2's turn entered the pod
    expect(d.pod.sent).toHaveLength(1);
    expect(d.logged('a thread born inside a pod netns keeps it alive')).toHaveLength(1);
    expect(d.logged('4321 (HeapHelper)')).toHaveLength(1);
    expect(d.timers.now()).toBeLessThan(1100);
    expect(existsSync(join(d.state.dir, 'announcer-handover'))).toBe(true);
  });
});
