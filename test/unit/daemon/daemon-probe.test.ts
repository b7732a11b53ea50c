// The conflict probe of a deferred round 1 never holds the announcer's loop:
// while pod A's window runs (2 s), pod B's round goes out at its time and a
// control request is answered. Fakes as in daemon.test.ts: a manual clock
// moved by the fake poll(2), in-memory control sockets, records on disk.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runDaemon, type DaemonDeps } from '../../../src/daemon/daemon';
import { DAEMON_SOCKET, openDaemonLock } from '../../../src/daemon/paths';
import { decodeReply, encodeMessage, MAX_MESSAGE_BYTES, type Reply } from '../../../src/daemon/protocol';
import { createLogger } from '../../../src/log';
import { fakeLibc } from '../../support/fake-libc';
import { FakePod, jobIn, keptLog, makeStateDir, ScriptedBudget, writeJob, type StateDir } from '../../support/daemon-fakes';
import { FakeSockets } from '../../support/fake-sockets';
import { ManualTimers } from '../../support/manual-timers';

let state: StateDir;
let pod: FakePod;
let sockets: FakeSockets;
let timers: ManualTimers;
let lines: string[];
let script: { at: number; act: () => void }[];
/** Every poll(2) asked for: when, and how long it may wait. */
let polls: { at: number; timeoutMs: number }[];
let deps: DaemonDeps;

beforeEach(() => {
  state = makeStateDir();
  pod = new FakePod();
  sockets = new FakeSockets();
  timers = new ManualTimers();
  timers.sleep = async (ms) => timers.advance(ms);
  script = [];
  polls = [];
  lines = [];
  const kept = keptLog();
  deps = {
    stateDir: state.dir,
    libc: fakeLibc({ pollIn, close: () => undefined }),
    sockets,
    open: pod.opener(),
    timers,
    lockFile: async (path) => ({ path, release: () => undefined }),
    // Each job's lines name its container, so that the order of A's and B's rounds shows.
    jobLog: (job) => createLogger((line) => lines.push(`${job.containerId}: ${line.trimEnd()}`), 'debug'),
    log: kept.log,
    budget: new ScriptedBudget().budget,
    uid: 0,
    tryLock: () => true,
    writeMetrics: () => undefined,
    closeInBackground: (_fd, done) => queueMicrotask(() => done()),
    inheritedLockFd: openDaemonLock(state.dir),
    settings: { idleExitMs: 1000 },
  };
});
afterEach(() => state.remove());

/** poll(2): runs the script's acts that are due, moves the clock to the timeout or the next act; every fd is readable (nothing arrives on the receivers). */
function pollIn(fds: readonly number[], timeoutMs: number): boolean[] {
  polls.push({ at: timers.now(), timeoutMs });
  runScript();
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

/** A probe frame (sender IP 0.0.0.0) or an announcement. */
const kinds = (): string[] => pod.sent.map((f) => (f.readUInt32BE(28) === 0 ? 'probe' : 'garp'));

/** At `at` ms a client asks for the status; the reply is kept with the frames sent by the time it arrived. */
function statusAt(at: number): { reply?: Reply; sentBefore?: string[] } {
  const got: { reply?: Reply; sentBefore?: string[] } = {};
  script.push({
    at,
    act: () => {
      const fd = sockets.connect(join(state.dir, DAEMON_SOCKET));
      sockets.send(fd, encodeMessage({ op: 'status' }));
      const read = (): void => {
        const buf = Buffer.alloc(MAX_MESSAGE_BYTES);
        const n = sockets.receive(fd, buf);
        if (n === undefined) return void script.push({ at: timers.now() + 1, act: read });
        [got.reply, got.sentBefore] = [decodeReply(buf.subarray(0, n.length)), kinds()];
      };
      script.push({ at: timers.now() + 1, act: read });
    },
  });
  return got;
}

describe('the conflict probe in the background announcer', () => {
  it("does not hold the loop: B's round goes out 500 ms into A's 2 s window, before A's round 1, and a status request is answered during it", async () => {
    pod.arpFrames = [];
    // A: not ready during ADD; its round 1 probes for 2 s (probes at 0, 667, 1333 ms).
    writeJob(state, jobIn(state, { containerId: 'a', firstRoundAt: undefined, readyDeadline: timers.bootMs() + 10_000, conflictCheck: { action: 'warn', probeMs: 2000, probes: 3 } }));
    // B: round 1 sent 500 ms before; its round 2 is due 1000 ms after it, 500 ms into A's window.
    writeJob(state, jobIn(state, { containerId: 'b', firstRoundAt: timers.bootMs() - 500 }));
    const status = statusAt(1000);
    await runDaemon(deps);

    const announced = lines.filter((l) => l.includes('INFO announced')).map((l) => l.replace(/ frames=.*/, '').replace(/^.*?(\w): .*announced/, '$1'));
    expect(announced.slice(0, 2)).toEqual(['b round=2 of=3', 'a round=1 of=3']);
    // What went out of the pod: A's first probe, B's round 2, A's two other probes, A's round 1.
    expect(kinds().slice(0, 5)).toEqual(['probe', 'garp', 'probe', 'probe', 'garp']);
    // No poll(2) before B's due time was asked to wait past it.
    const early = polls.filter((p) => p.at < 500);
    expect(early.length).toBeGreaterThan(0);
    expect(early.filter((p) => p.at + p.timeoutMs > 500)).toEqual([]);
    // The status was answered in A's window: after its second probe, before its third, A still deferred.
    expect(status.sentBefore).toEqual(['probe', 'garp', 'probe']);
    expect(status.reply).toMatchObject({ ok: true, status: { attachments: expect.arrayContaining([expect.objectContaining({ containerId: 'a', deferred: true })]) } });
  });
});
