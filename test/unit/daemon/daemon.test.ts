// The announcer's loop end to end through fakes: a fake pod and budget,
// in-memory control sockets, a manual clock moved by the fake poll(2), and
// records in a temporary stateDir. Requests arrive on a script of times.
import { existsSync, fstatSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BackgroundJob } from '../../../src/announce/background-job';
import type { Counters } from '../../../src/daemon/counters';
import { runDaemon, type DaemonDeps } from '../../../src/daemon/daemon';
import { DAEMON_SOCKET, openDaemonLock } from '../../../src/daemon/paths';
import { decodeReply, encodeMessage, MAX_MESSAGE_BYTES, type Reply, type Request } from '../../../src/daemon/protocol';
import { fakeLibc } from '../../support/fake-libc';
import { FakePod, jobIn, keptLog, link, makeStateDir, ScriptedBudget, writeJob, type StateDir } from '../../support/daemon-fakes';
import { FakeSockets } from '../../support/fake-sockets';
import { ManualTimers } from '../../support/manual-timers';

let state: StateDir;
let pod: FakePod;
let budget: ScriptedBudget;
let sockets: FakeSockets;
let timers: ManualTimers;
let lines: string[];
let script: { at: number; act: () => void }[];
let pollError: Error | undefined;
let metrics: { file: string; text: string }[];
let closes: { fd: number; done: (error?: unknown) => void }[];
let deps: DaemonDeps;

beforeEach(() => {
  state = makeStateDir();
  pod = new FakePod();
  budget = new ScriptedBudget();
  sockets = new FakeSockets();
  timers = new ManualTimers();
  timers.sleep = async (ms) => timers.advance(ms);
  script = [];
  pollError = undefined;
  metrics = [];
  closes = [];
  const kept = keptLog();
  lines = kept.lines;
  deps = {
    stateDir: state.dir,
    libc: fakeLibc({ pollIn, close: () => undefined }),
    sockets,
    open: pod.opener(),
    timers,
    lockFile: async (path) => ({ path, release: () => undefined }),
    jobLog: () => kept.log,
    log: kept.log,
    budget: budget.budget,
    uid: 0,
    tryLock: () => true,
    writeMetrics: (file, text) => void metrics.push({ file, text }),
    closeInBackground: (fd, done) => {
      closes.push({ fd, done });
      queueMicrotask(() => done());
    },
    inheritedLockFd: openDaemonLock(state.dir),
    settings: { idleExitMs: 1000 },
  };
});
afterEach(() => state.remove());

/** poll(2): runs the script's acts that are due, and moves the clock to the timeout or the next act. */
function pollIn(fds: readonly number[], timeoutMs: number): boolean[] {
  runScript();
  if (pollError) {
    const err = pollError;
    pollError = undefined;
    throw err;
  }
  const next = Math.min(...script.map((s) => s.at), timers.now() + timeoutMs);
  timers.advance(Math.max(0, next - timers.now()));
  runScript();
  return fds.map(() => true);
}

function runScript(): void {
  for (const s of script.filter((x) => x.at <= timers.now())) {
    script.splice(script.indexOf(s), 1);
    s.act();
  }
}

/** At `at` ms, a client sends `request`; its reply lands in the returned array once served. */
function requestAt(at: number, request: Request | Buffer): (Reply | undefined)[] {
  const replies: (Reply | undefined)[] = [];
  script.push({
    at,
    act: () => {
      const fd = sockets.connect(join(state.dir, DAEMON_SOCKET));
      sockets.send(fd, Buffer.isBuffer(request) ? request : encodeMessage(request));
      const read = (): void => {
        const buf = Buffer.alloc(MAX_MESSAGE_BYTES);
        const got = sockets.receive(fd, buf);
        if (got === undefined) script.push({ at, act: read }); // not served yet
        else replies.push(got.length > 0 ? decodeReply(buf.subarray(0, got.length)) : undefined);
      };
      script.push({ at, act: read });
    },
  });
  return replies;
}

const sentAt = (at: number, extra: Partial<BackgroundJob> = {}): BackgroundJob => jobIn(state, { firstRoundAt: timers.bootMs() + at, ...extra });
const statusCounters = (reply: Reply | undefined): Counters => (reply as { status: { counters: Counters } }).status.counters;

describe('runDaemon', () => {
  it('takes up the jobs of the records, sends their rounds at their offsets, and exits idle, its socket removed', async () => {
    writeJob(state, sentAt(0));
    const status = requestAt(1500, { op: 'status' });
    await runDaemon(deps);
    expect(pod.sent).toHaveLength(2);
    expect(timers.now()).toBeGreaterThanOrEqual(3000 + 1000);
    expect(statusCounters(status[0]).rounds.sent).toBe(1);
    expect(status[0]).toMatchObject({ ok: true, status: { attachments: [{ containerId: 'c1', nextRoundInMs: 1500, roundsSent: 2 }] } });
    expect(sockets.paths).toEqual([]);
    expect(existsSync(join(state.dir, DAEMON_SOCKET))).toBe(false);
    expect(lines.some((l) => l.includes('background announcer started') && l.includes('pending=1'))).toBe(true);
    expect(lines.at(-1)).toContain('background announcer stopped');
  });

  it('a sync takes the job ADD wrote, counts round 1 and its conflicts, and takes the settings; cancel stops it: nothing sent after the reply', async () => {
    const job = sentAt(100, { idleExitMs: 200, metricsFile: '/m.prom' });
    const name = 'c1@eth0.json';
    script.push({ at: 100, act: () => void writeJob(state, job) }); // ADD writes the record, then asks
    const sent = { garpRequest: 1, garpReply: 0, na: 0 };
    const synced = requestAt(100, { op: 'sync', record: name, sent, conflicts: 2, settings: { idleExitMs: 200, metricsFile: '/m.prom' } });
    const cancelled = requestAt(1150, { op: 'cancel', record: name });
    const status = requestAt(1200, { op: 'status' });
    await runDaemon(deps);
    expect([synced[0], cancelled[0]]).toEqual([{ ok: true }, { ok: true }]);
    expect(pod.sent).toHaveLength(1); // round 2 at 1100; round 3 (3100) cancelled
    expect(statusCounters(status[0])).toMatchObject({ frames: { garpRequest: 2 }, rounds: { sent: 2 }, conflicts: 2 });
    expect(timers.now()).toBeLessThan(1200 + 1000); // idleExitMs 200 from the job
    expect(metrics.at(-1)).toMatchObject({ file: '/m.prom' });
    expect(metrics.at(-1)!.text).toContain('cni_announcer_frames_sent_total{kind="garp_request"} 2');
  });

  it('count adds what an ADD without background work sent; garbage gets an error reply and changes nothing', async () => {
    const counted = requestAt(0, { op: 'count', sent: { garpRequest: 0, garpReply: 1, na: 2 }, conflicts: 1, settings: { idleExitMs: 100 } });
    const garbage = requestAt(10, Buffer.from('not json'));
    const status = requestAt(20, { op: 'status' });
    await runDaemon(deps);
    expect(counted[0]).toEqual({ ok: true });
    expect(garbage[0]).toEqual({ ok: false, error: 'not JSON' });
    expect(statusCounters(status[0])).toMatchObject({ frames: { garpRequest: 0, garpReply: 1, na: 2 }, rounds: { sent: 1 }, conflicts: 1, errors: 0 });
    expect(timers.now()).toBeLessThan(1000); // idleExitMs 100 from the request
  });

  it('a throw on every path is counted, logged, and the loop lives on: poll, a round, a request, metrics, a background close, the cleanup', async () => {
    writeJob(state, sentAt(0, { schedule: [0, 100, 200, 300], metricsFile: '/m.prom' }));
    pollError = new Error('poll broke');
    budget.answers.push(new Error('bucket broke'));
    let jobLogCalls = 0;
    const jobLog = deps.jobLog;
    deps.jobLog = (job) => {
      if (++jobLogCalls === 2) throw new Error('log broke');
      return jobLog(job);
    };
    const name = 'c2@eth0.json';
    const c2 = sentAt(0, { containerId: 'c2', schedule: [0, 5000] });
    script.push({ at: 50, act: () => void writeJob(state, c2) });
    const failedSync = requestAt(50, { op: 'sync', record: name, sent: { garpRequest: 0, garpReply: 0, na: 0 } });
    let metricWrites = 0;
    deps.writeMetrics = () => {
      if (++metricWrites === 1) throw new Error('disk full');
    };
    deps.closeInBackground = (fd, done) => queueMicrotask(() => done(new Error(`close ${fd} broke`)));
    pod.links = [link()];
    const status = requestAt(350, { op: 'status' });
    await runDaemon(deps);
    expect(failedSync[0]).toEqual({ ok: false, error: 'internal error' });
    expect(statusCounters(status[0]).errors).toBeGreaterThanOrEqual(5); // poll, round, request, metrics, closes
    expect(pod.sent.length).toBe(2); // rounds 3 and 4 of c1; round 2 failed
    const errors = lines.filter((l) => l.includes('ERROR') || l.includes('WARN'));
    for (const what of ['turn failed', 'bucket broke', 'control request failed', 'disk full', 'cannot close a socket']) {
      expect(errors.some((l) => l.includes(what))).toBe(true);
    }
    expect(lines.at(-1)).toContain('background announcer stopped');
  });

  it('cleanup never throws: sockets that fail to close are counted', async () => {
    writeJob(state, jobIn(state, { firstRoundAt: undefined, readyDeadline: timers.bootMs() + 100_000 }));
    pod.links = [link({ up: false })];
    sockets.closeError = new Error('EIO');
    const listeners = process.listenerCount('SIGTERM');
    script.push({ at: 600, act: () => process.listeners('SIGTERM').at(-1)!('SIGTERM') });
    await expect(runDaemon(deps)).resolves.toBeUndefined();
    expect(lines.some((l) => l.includes('cannot close a control socket'))).toBe(true);
    expect(pod.open).toBe(0); // the deferred wait's session
    expect(process.listenerCount('SIGTERM')).toBe(listeners);
  });

  it('before exiting idle it reads the records again: work an ADD wrote meanwhile keeps it running', async () => {
    script.push({ at: 999, act: () => void writeJob(state, sentAt(999)) }); // never told through the socket
    await runDaemon(deps);
    expect(pod.sent).toHaveLength(2);
    expect(lines.filter((l) => l.includes('background announcer started'))).toHaveLength(1);
  });

  it('SIGTERM stops it after the turn', async () => {
    writeJob(state, sentAt(0, { schedule: [0, 1000, 60_000] }));
    script.push({ at: 1500, act: () => process.listeners('SIGTERM').at(-1)!('SIGTERM') });
    await runDaemon(deps);
    expect(timers.now()).toBeLessThan(3000);
    expect(pod.sent).toHaveLength(1);
  });

  it('returns without running while another announcer holds the lock, after waiting 2 s for it to let go', async () => {
    timers.advance(5000);
    deps.tryLock = () => false;
    writeJob(state, sentAt(0));
    await runDaemon(deps);
    expect({ sent: pod.sent.length, listened: sockets.closed.length, now: timers.now() }).toEqual({ sent: 0, listened: 0, now: 7020 });
  });

  it('takes the lock handed over (fd 3), or else opens the lock file itself; closes it on return', async () => {
    const locked: number[] = [];
    deps.tryLock = (fd) => (locked.push(fd), true);
    const handed = deps.inheritedLockFd!;
    await runDaemon(deps);
    expect(locked).toEqual([handed]);
    expect(() => fstatSync(handed)).toThrow(/EBADF/);
    deps.inheritedLockFd = undefined;
    await runDaemon(deps);
    expect(locked).toHaveLength(2);
    expect(typeof locked[1]).toBe('number');
    expect(() => fstatSync(locked[1]!)).toThrow(/EBADF/);
    expect(existsSync(join(state.dir, 'announcer-daemon.flock'))).toBe(true);
  });

  it('SIGINT stops it too, and both handlers are gone afterwards', async () => {
    const before = [process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')];
    writeJob(state, sentAt(0, { schedule: [0, 1000, 60_000] }));
    script.push({ at: 1500, act: () => process.listeners('SIGINT').at(-1)!('SIGINT') });
    await runDaemon(deps);
    expect(timers.now()).toBeLessThan(3000);
    expect([process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')]).toEqual(before);
  });

  it('stays while a client is connected, and idles out idleExitMs after the last work ended', async () => {
    script.push({ at: 900, act: () => void sockets.connect(join(state.dir, DAEMON_SOCKET)) }); // says nothing: dropped at 1900
    await runDaemon(deps);
    expect(timers.now()).toBeGreaterThanOrEqual(2900);
    expect(timers.now()).toBeLessThan(3500);
  });

  it('counts a round only when the ADD sent frames', async () => {
    const status = requestAt(10, { op: 'status' });
    requestAt(0, { op: 'count', sent: { garpRequest: 0, garpReply: 0, na: 0 } });
    await runDaemon(deps);
    expect(statusCounters(status[0]).rounds.sent).toBe(0);
  });

  it('closes the sockets an ADD hands over 2 s later, in the background', async () => {
    deps.settings = { idleExitMs: 5000 };
    script.push({
      at: 100,
      act: () => {
        const fd = sockets.connect(join(state.dir, DAEMON_SOCKET));
        sockets.send(fd, encodeMessage({ op: 'count', sent: { garpRequest: 1, garpReply: 0, na: 0 } }), [33]);
      },
    });
    const closedAt: number[] = [];
    deps.closeInBackground = (_fd, done) => (closedAt.push(timers.now()), queueMicrotask(() => done()));
    await runDaemon(deps);
    expect(closedAt).toHaveLength(1);
    expect(closedAt[0]).toBeGreaterThanOrEqual(2100);
    expect(closedAt[0]).toBeLessThan(2700);
  });

  it('a close koffi refuses runs on this thread, counted', async () => {
    writeJob(state, sentAt(0, { schedule: [0, 100] }));
    const closedNow: number[] = [];
    deps.libc = fakeLibc({ pollIn, close: (fd) => void closedNow.push(fd) });
    deps.closeInBackground = () => {
      throw new Error('too many async calls');
    };
    const status = requestAt(200, { op: 'status' });
    await runDaemon(deps);
    expect(closedNow).toEqual(pod.released);
    expect(statusCounters(status[0]).errors).toBe(1);
  });

  it('writes metrics once a second at most, only when they changed, and once more on exit', async () => {
    writeJob(state, sentAt(0, { schedule: [0, 1100, 1200, 1300], metricsFile: '/m.prom' }));
    script.push({ at: 1300, act: () => process.listeners('SIGTERM').at(-1)!('SIGTERM') });
    await runDaemon(deps);
    expect(metrics.map((m) => /rounds_total\{outcome="sent"\} (\d+)/.exec(m.text)![1])).toEqual(['1', '3']);
  });

  it('keeps metrics to at most one write a second, only when they changed, and a last one on exit', async () => {
    writeJob(state, sentAt(0, { schedule: [0, 100, 200, 2500], idleExitMs: 3000, metricsFile: '/m.prom' }));
    await runDaemon(deps);
    expect(metrics.length).toBeGreaterThanOrEqual(2);
    expect(metrics.at(-1)!.text).toContain('cni_announcer_rounds_total{outcome="sent"} 3');
    expect(new Set(metrics.map((m) => m.text)).size).toBe(metrics.length);
  });
});
