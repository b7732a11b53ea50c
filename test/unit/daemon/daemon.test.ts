// The announcer's loop end to end through fakes (runDaemon, test/support/daemon-loop.ts): the schedule from the
// records, the jobs hosted commands hand over in memory, the node settings, an idle announcer that sleeps until
// something is due and exits idleExitMs after its last work (never when resident), the commands' waits in its one poll,
// the metrics file, every stop (a signal, a hand-over to a new build or to a resident one, a thread born in a pod
// netns) and what the next announcer takes up, failures it lives through, the HTTP endpoint; and LoopWaits, the
// commands' waits.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LoopWaits, STAMP_MS } from '../../../src/daemon/daemon';
import { HttpListenError } from '../../../src/daemon/http';
import { ROUNDS_PER_TURN, writeHandover } from '../../../src/daemon/table';
import { ANNOUNCER_SOCKET, HANDOVER_FILE, START_MARKER } from '../../../src/state-files';
import { createLogger } from '../../../src/log';
import type { SysError } from '../../../src/sys/sys-error';
import { parseListenAddress } from '../../../src/sys/tcp-socket';
import { jobRecord, link, POD_EVENTS_FD, writeJob } from '../../support/daemon-fakes';
import { answerOf, BUILD, countersOf, DaemonLoop } from '../../support/daemon-loop';
import { HttpClient, PICKED_PORT } from '../../support/fake-tcp';
import { settle } from '../../support/manual-timers';
import { logRecords } from '../../support/log-records';
import { attachmentRecord } from '../../support/records';

// The registry loads on first use (metrics.ts): loaded here once, its import resolves within a turn of the fake loop,
// whose clock moves without waiting for the real time a first import takes.
await import('../../../src/daemon/prometheus');

let d: DaemonLoop;
beforeEach(() => {
  d = new DaemonLoop();
});
afterEach(() => d.state.remove());

const STATUS = { op: 'status' } as const;
const handoverOf = (loop = d): unknown => JSON.parse(readFileSync(join(loop.state.dir, HANDOVER_FILE), 'utf8'));
const NO_FRAMES = { garpRequest: 0, garpReply: 0, na: 0 };
/** A job's fields while its pod is not ready yet: round 1 waits for it up to `ms` from now. */
const deferred = (ms: number) => ({ firstRoundAt: undefined, readyDeadline: d.timers.bootMs() + ms });

/** The next announcer on the same stateDir, its clock where the first one's stopped, plus `later` ms. */
function nextAnnouncer(later = 0): DaemonLoop {
  const next = new DaemonLoop(d.state);
  next.timers.advance(d.timers.now() + later);
  return next;
}

/** What connect(2) to the announcer's socket says at `at` ms (undefined until then; 'connected' when it connects). */
function connectAt(at: number): { code?: string } {
  const seen: { code?: string } = {};
  d.poll.at(at, () => {
    try {
      d.sockets.connect(join(d.state.dir, ANNOUNCER_SOCKET));
      seen.code = 'connected';
    } catch (err) {
      seen.code = (err as SysError).code;
    }
  });
  return seen;
}

/** The poll(2)s the loop made, each as `when+timeout` (ms). */
const polls = (): string[] => d.poll.calls.map((c) => `${c.at}+${c.timeoutMs}`);

describe('runDaemon: the schedule and the records', () => {
  const takesUpTitle =
    'takes up the jobs of the records, sends their rounds at their offsets, answers status, and exits idleExitMs ' +
    'after its last work, its socket removed';
  it(takesUpTitle, async () => {
    writeJob(d.state, d.sentAt(0));
    const status = d.controlAt(1500, STATUS);
    await d.run();
    expect(d.pod.sent).toHaveLength(2);
    expect(d.timers.now()).toBe(3000 + 1000);
    expect(countersOf(status).rounds.sent).toBe(1);
    expect(answerOf(status)).toMatchObject({
      ok: true,
      status: { attachments: [{ containerId: 'c1', nextRoundInMs: 1500, roundsSent: 2 }] },
    });
    expect([d.sockets.paths, existsSync(join(d.state.dir, ANNOUNCER_SOCKET))]).toEqual([[], false]);
    expect(d.records('announcer started').map((r) => [r.fields.pending, r.fields.build])).toEqual([[1, BUILD]]);
    const lastTwo = d.records().slice(-2);
    expect(lastTwo.map((r) => r.msg)).toEqual(['idle: stopping', 'announcer stopped']);
  });

  it(
    'says it is ready once, when its socket listens, before ' + 'it reads the records and its start marker is gone',
    async () => {
      writeJob(d.state, d.sentAt(0));
      const marker = join(d.state.dir, START_MARKER);
      writeFileSync(marker, '');
      const ready: unknown[] = [];
      d.deps.ready = () =>
        void ready.push([d.sockets.paths, d.records('announcer started').length, existsSync(marker)]);
      await d.run();
      expect(ready).toEqual([[[join(d.state.dir, ANNOUNCER_SOCKET)], 0, true]]);
      expect(existsSync(marker)).toBe(false);
    },
  );

  const stampsTitle =
    'stamps its progress on the lock fd it holds at its first turn, then at most once per STAMP_MS while it turns';
  it(stampsTitle, async () => {
    writeJob(d.state, d.sentAt(0, { schedule: [0, 500, 1000, 1500, 2000, 2500, 3000] }));
    await d.run();
    const at = d.stamps.map((s) => s.at);
    expect(at[0]).toBe(0);
    expect(at.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(STAMP_MS);
    expect(new Set(d.stamps.map((s) => s.fd)).size).toBe(1);
  });

  const hostedTitle =
    'a hosted ADD hands its job to the table in memory, its round 1 and conflicts counted (a report without frames ' +
    'counts no round), the commands it ran counted by CNI_COMMAND; a hosted DEL cancels the job: nothing sent after';
  it(hostedTitle, async () => {
    d.deps.settings.idleExitMs = 200;
    const job = d.sentAt(100);
    d.runner = async (env, a) => {
      if (env.CNI_COMMAND === 'DEL') a.jobs.cancel('c1@eth0.json');
      else {
        writeJob(d.state, job); // ADD writes the record (the journal), then hands the job over
        a.jobs.added('c1@eth0.json', attachmentRecord(), { sent: NO_FRAMES });
        a.jobs.added('c1@eth0.json', jobRecord(job), { sent: { ...NO_FRAMES, garpRequest: 1 }, conflicts: 2 });
      }
      return { exit: 0, stdout: '' };
    };
    d.cniAt(100);
    d.cniAt(1150, BUILD, { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c1' });
    const status = d.controlAt(1200, STATUS);
    await d.run();
    expect(d.pod.sent).toHaveLength(1); // round 2 at 1100; round 3 (3100) cancelled
    expect(countersOf(status)).toMatchObject({
      frames: { garpRequest: 2 },
      rounds: { sent: 2 },
      conflicts: 2,
      served: { ADD: 1, DEL: 1, CHECK: 0, GC: 0, STATUS: 0 },
    });
    expect(d.timers.now()).toBe(1200 + 200);
  });

  const idleSettingTitle =
    "idles out after the node settings' idleExitMs, never reading the records again (it is their only writer); a " +
    "record's own idleExitMs and metricsFile (written before node settings) change nothing";
  it(idleSettingTitle, async () => {
    d.deps.settings.idleExitMs = 30_000;
    writeJob(d.state, { ...d.sentAt(0, { schedule: [0] }), idleExitMs: 100, metricsFile: '/m.prom' } as never);
    d.poll.at(29_000, () => void writeJob(d.state, d.sentAt(0, { containerId: 'c2' }))); // no command wrote it
    await d.run();
    expect([d.timers.now(), d.pod.sent.length, d.metrics]).toEqual([30_000, 0, []]);
  });

  const sleepsTitle =
    'an idle announcer sleeps in one poll until its idle exit is due, idleExitMs after its last work (a client ' +
    'connected is work): no fixed wake, no stamp meanwhile';
  it(sleepsTitle, async () => {
    d.controlAt(0, STATUS);
    d.lineAt(900, () => Buffer.alloc(0)); // says nothing: dropped at 1900
    await d.run();
    // The silent client is a call waiting: the loop turns at 1000 to stamp, then sleeps to its drop and its idle exit.
    expect(polls()).toEqual(['0+1000', '0+1000', '900+100', '1000+900', '1900+1000']);
    expect([d.timers.now(), d.stamps.map((s) => s.at)]).toEqual([2900, [0, 1000]]);
  });

  const busyTitle =
    'while a call waits for its answer it turns, and stamps, at least once per STAMP_MS (a call judges an old stamp ' +
    'hung); once answered it sleeps again';
  it(busyTitle, async () => {
    d.deps.settings.idleExitMs = 300;
    d.cniAt(100);
    d.poll.at(5000, () => d.commands[0]!.end({ exit: 0, stdout: '' }));
    await d.run();
    const at = d.stamps.map((s) => s.at);
    expect(at.filter((t) => t <= 5000)).toEqual([0, 1000, 2000, 3000, 4000, 5000]);
    expect(polls().slice(-2)).toEqual(['4000+1000', '5000+300']);
  });

  const residentTitle =
    'a resident one refuses to hand over, and never exits for being idle: with nothing due it sleeps in a poll ' +
    'without a timeout, and is still serving a minute after its idleExitMs';
  it(residentTitle, async () => {
    d.deps.resident = true;
    d.deps.settings.idleExitMs = 100;
    const ask = d.controlAt(0, { op: 'handover' });
    const late = d.controlAt(60_000, STATUS);
    d.signalAt(61_000, 'SIGTERM');
    await d.run();
    expect(answerOf(ask)).toEqual({ ok: false, error: 'a resident announcer serves this stateDir' });
    expect(answerOf(late)).toMatchObject({ ok: true, status: { attachments: [] } });
    expect(d.records('a resident announcer starts: handing over to it')).toEqual([]);
    expect(polls()).toEqual(['0+Infinity', '0+Infinity', '60000+Infinity']);
    expect([d.timers.now(), d.stamps.map((s) => s.at)]).toEqual([61_000, [0, 60_000]]);
  });
});

describe('runDaemon: the metrics file', () => {
  const metricsTitle =
    "writes the node's metricsFile at most once a second and only when it changed (never the same text twice); a " +
    'change the throttle held back wakes the loop about a second later and is written then; once more on exit';
  it(metricsTitle, async () => {
    Object.assign(d.deps.settings, { metricsFile: '/m.prom', idleExitMs: 10_000 });
    writeJob(d.state, d.sentAt(0, { schedule: [0, 100, 200, 2500, 2600] }));
    d.signalAt(2600, 'SIGTERM');
    await d.run();
    const sent = d.metrics.map((m) => `${m.file}@${m.at}: ${/rounds_total\{outcome="sent"\} (\d+)/.exec(m.text)![1]}`);
    expect(sent).toEqual(['/m.prom@100: 1', '/m.prom@1100: 2', '/m.prom@2500: 3', '/m.prom@2600: 4']);
    // After the write held back at 200, the loop sleeps until it is due (not the 2300 ms to the next round).
    expect(polls().filter((p) => p.startsWith('200+') || p.startsWith('1100+'))).toEqual(['200+900', '1100+1400']);
  });
});

describe('runDaemon: CNI commands', () => {
  beforeEach(() => {
    d.deps.settings.idleExitMs = 300;
    d.controlAt(0, STATUS);
  });
  const EVENT_FD = 77;

  const waitingTitle =
    "a command waiting on an fd resumes when the loop's poll finds it readable, every poll meanwhile watching that " +
    'fd; a status request is answered meanwhile';
  it(waitingTitle, async () => {
    const order: string[] = [];
    d.runner = async (env, a, gate) => {
      order.push(`${env.CNI_COMMAND} waits`);
      await a.waits.readable([EVENT_FD], 5000, gate.signal);
      order.push(`resumed at ${d.timers.now()}`);
      return { exit: 0, stdout: '{"cniVersion":"1.0.0"}' };
    };
    const add = d.cniAt(10);
    const status = d.controlAt(150, STATUS);
    d.poll.at(150, () => void order.push('status asked'));
    d.poll.at(420, () => void d.poll.ready.add(EVENT_FD));
    await d.run();
    expect(order).toEqual(['ADD waits', 'status asked', 'resumed at 420']);
    expect([answerOf(status), status.client!.replies[0]!.at]).toEqual([{ ok: true, status: expect.anything() }, 150]);
    expect(add.client!.replies).toEqual([{ at: 420, reply: { exit: 0, stdout: '{"cniVersion":"1.0.0"}' } }]);
    const meanwhile = d.poll.calls.filter((c) => c.at >= 10 && c.at < 420);
    expect(meanwhile.length).toBeGreaterThan(0);
    expect(meanwhile.every((c) => c.read.includes(EVENT_FD))).toBe(true);
  });

  it('a command sleeping on the loop ends at its time, while a round goes out at its own', async () => {
    writeJob(d.state, d.sentAt(-900, { schedule: [0, 1000] })); // round 2 due at 100
    let roundsBefore = -1;
    d.runner = async (_env, a) => {
      await a.waits.sleep(250);
      roundsBefore = d.pod.sent.length;
      return { exit: 0, stdout: '' };
    };
    const add = d.cniAt(0);
    await d.run();
    expect([roundsBefore, add.client!.replies]).toEqual([1, [{ at: 250, reply: { exit: 0, stdout: '' } }]]);
  });

  const neverPollsTitle =
    "never polls a running command's connection for input: bytes or an EOF left on it would keep poll(2) from sleeping";
  it(neverPollsTitle, async () => {
    const add = d.cniAt(10);
    d.poll.at(10, () => void add.client!.send('more bytes the announcer never reads\n'));
    d.poll.at(1000, () => d.commands[0]!.end({ exit: 0, stdout: '' }));
    await d.run();
    expect(add.client!.lines()).toEqual([{ exit: 0, stdout: '' }]);
    const serverEnd = add.client!.fd + 1;
    // Its request line was read as it was accepted (it came with the connection): no poll ever had its socket.
    expect(d.poll.calls.filter((c) => c.read.includes(serverEnd))).toEqual([]);
    expect(d.poll.calls.filter((c) => c.at > 10 && c.at < 1000).length).toBeLessThan(5); // no spin
  });

  it(
    'holds the rounds of the attachment a command runs ' + "on until it ends (a DEL's before its pod's round)",
    async () => {
      writeJob(d.state, d.sentAt(-900, { schedule: [0, 1000] })); // round 2 due at 100
      d.cniAt(50, BUILD, { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c1', CNI_IFNAME: 'eth0' });
      let sentBefore = -1;
      d.poll.at(400, () => ((sentBefore = d.pod.sent.length), d.commands[0]!.end({ exit: 0, stdout: '' })));
      await d.run();
      expect([sentBefore, d.pod.sent.length]).toEqual([0, 1]);
    },
  );
});

describe('runDaemon: stops', () => {
  const signalTitle =
    'stops on %s (resident: %s) after the turn and hands over: where each burst stands, for the next announcer, ' +
    'which sends the rest (late within grace rather than never, none twice); the handlers go';
  it.each([
    ['SIGTERM', true],
    ['SIGINT', false],
  ] as const)(signalTitle, async (signal, resident) => {
    const listeners = [process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')];
    d.deps.resident = resident;
    writeJob(d.state, d.sentAt(0, { schedule: [0, 1000, 3000, 6000] }));
    d.signalAt(1500, signal);
    await d.run();
    expect([d.timers.now(), d.announced()]).toEqual([1500, [2]]);
    expect(handoverOf()).toEqual({ 'c1@eth0.json': { job: expect.objectContaining({ containerId: 'c1' }), next: 2 } });
    expect(d.records(`${signal}: handing over to the next announcer`)).toHaveLength(1);
    expect(d.records('announcer stopped')[0]!.fields).toMatchObject({ stopMs: 0, passedOn: 0, handedOver: 1 });
    expect([process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')]).toEqual(listeners);
    // A shim starts the next one 2 s later: round 3 (3000) is 500 ms late, within grace.
    const next = nextAnnouncer(2000);
    await next.run();
    expect([existsSync(join(d.state.dir, HANDOVER_FILE)), next.announced()]).toEqual([false, [3, 4]]);
  });

  it('serves a command of another build while its own executable is in place', async () => {
    d.deps.settings.idleExitMs = 100;
    const add = d.cniAt(10, 'b2');
    d.poll.at(50, () => d.commands[0]!.end({ exit: 0, stdout: 'done' }));
    await d.run();
    expect(add.client!.lines()).toEqual([{ exit: 0, stdout: 'done' }]);
    expect(existsSync(join(d.state.dir, HANDOVER_FILE))).toBe(false);
  });

  const replacedTitle =
    'once replaced, a command of another build stops it: refused with "handover" as those after it, the socket ' +
    'gone, the running command that acted let end while bursts go on; the next announcer sends the rest, none twice';
  it(replacedTitle, async () => {
    writeJob(d.state, d.sentAt(0, { schedule: [0, 1000, 2000, 6000] }));
    const running = d.cniAt(500);
    d.poll.at(600, () => d.commands[0]!.gate.acting());
    d.poll.at(1100, () => void (d.replaced = true));
    const newBuild = d.cniAt(1100, 'b2');
    const sameBuild = d.cniAt(1100);
    const connect = connectAt(1200);
    d.poll.at(2500, () => d.commands[0]!.end({ exit: 0, stdout: 'ok' }));
    await d.run();
    for (const passed of [newBuild, sameBuild]) expect(passed.client!.lines()).toEqual([{ refused: 'handover' }]);
    expect([d.commands.length, d.sockets.paths, connect.code]).toEqual([1, [], 'ENOENT']);
    expect([running.client!.lines(), running.client!.ended]).toEqual([[{ exit: 0, stdout: 'ok' }], true]);
    expect([d.timers.now(), d.announced()]).toEqual([2500, [2, 3]]); // returned once the command ended
    expect(handoverOf()).toEqual({
      'c1@eth0.json': { job: expect.objectContaining({ containerId: 'c1', firstRoundAt: 1_000_000 }), next: 3 },
    });
    const replaced = d.records('executable replaced: handing over to the new build');
    expect(replaced.map((r) => r.fields)).toEqual([{ build: BUILD, newBuild: 'b2' }]);
    expect(d.records('announcer stopped')[0]!.fields).toMatchObject({ stopMs: 1400, passedOn: 2, handedOver: 1 });
    // The next one starts 3 s later: round 4 (6000) is then 500 ms late, within LATE_GRACE_MS.
    const next = nextAnnouncer(3000);
    await next.run();
    expect([existsSync(join(d.state.dir, HANDOVER_FILE)), next.announced()]).toEqual([false, [4]]);
    expect(next.records('background work scheduled').map((r) => r.fields.how)).toEqual(['handed over']);
  });

  it('while handing over, bursts go on and the loop does not spin on a round falling due or a pod event', async () => {
    writeJob(d.state, d.sentAt(0, { schedule: [0, 1000] }));
    writeJob(d.state, d.sentAt(0, { containerId: 'c2', ...deferred(60_000) }));
    d.pod.links = [link({ up: false })]; // c2 waits for its pod: its event socket is polled
    d.cniAt(100);
    d.poll.at(150, () => d.commands[0]!.gate.acting());
    d.poll.at(200, () => void (d.replaced = true));
    d.cniAt(200, 'b2');
    d.pod.onDrain = (fd) => void d.poll.ready.delete(fd);
    d.poll.at(300, () => void d.poll.ready.add(POD_EVENTS_FD)); // the pod changed: the deferred wait drains it
    d.poll.at(1500, () => d.commands[0]!.end({ exit: 0, stdout: '' }));
    await d.run();
    expect(d.poll.calls.filter((c) => c.at > 200 && c.at < 1500).length).toBeLessThan(30);
    expect([d.timers.now(), d.pod.sent]).toEqual([1500, []]); // the (one fake) pod is down: c1's round 2 is skipped
  });

  const askedTitle =
    'asked to hand over by a resident one, one a shim started answers ok, cuts its socket off, passes on the command ' +
    'that has not acted, lets the one that has end, writes where each burst stands and returns';
  it(askedTitle, async () => {
    writeJob(d.state, d.sentAt(0, { schedule: [0, 1000, 3000, 6000] }));
    const running = d.cniAt(500);
    const waiting = d.cniAt(600);
    d.poll.at(700, () => d.commands[0]!.gate.acting());
    const ask = d.controlAt(1100, { op: 'handover' });
    const connect = connectAt(1200);
    d.poll.at(2000, () => d.commands[0]!.end({ exit: 0, stdout: 'ok' }));
    await d.run();
    expect([answerOf(ask), connect.code]).toEqual([{ ok: true }, 'ENOENT']);
    expect(waiting.client!.lines()).toEqual([{ refused: 'handover' }]);
    expect(running.client!.lines()).toEqual([{ exit: 0, stdout: 'ok' }]);
    expect(d.commands[1]!.gate.signal.aborted).toBe(true);
    expect(d.timers.now()).toBe(2000); // returned once the command ended
    expect(handoverOf()).toEqual({ 'c1@eth0.json': { job: expect.objectContaining({ containerId: 'c1' }), next: 2 } });
    expect(d.records('a resident announcer starts: handing over to it')).toHaveLength(1);
  });

  const threadTitle =
    'after a turn that entered a pod netns it looks for its threads there (and only then): one found is counted, ' +
    'named, and the announcer hands over to a fresh one';
  it(threadTitle, async () => {
    d.deps.resident = true;
    writeJob(d.state, d.sentAt(0, { schedule: [0, 1000, 3000] }));
    d.controlAt(500, STATUS);
    d.threads = [{ tid: 77, comm: 'worker' }];
    await d.run();
    expect([d.timers.now(), d.threadLooks, d.announced()]).toEqual([1000, 1, [2]]);
    const error = d.records('a thread born inside a pod netns keeps it alive: handing over to a fresh announcer');
    expect(error.map((r) => [r.level, r.fields.threads])).toEqual([['error', '["77 (worker)"]']]);
    expect(d.records('handing over: a thread of this announcer is in a pod netns')).toHaveLength(1);
    expect(handoverOf()).toEqual({ 'c1@eth0.json': { job: expect.anything(), next: 2 } });
  });

  const lateTitle =
    'a round handed over that fell due more than LATE_GRACE_MS before is skipped and counted, the next one sent';
  it(lateTitle, async () => {
    const job = d.sentAt(-4500, { schedule: [0, 1000, 3000, 6000] }); // round 3 due 1500 ms ago
    writeJob(d.state, job);
    writeHandover(d.state.dir, new Map([['c1@eth0.json', { job, next: 2 }]]));
    const status = d.controlAt(100, STATUS);
    await d.run();
    expect([d.announced(), countersOf(status).rounds.skippedLate]).toEqual([[4], 1]);
  });
});

describe('runDaemon: failures', () => {
  const throwTitle =
    'a throw on every path is counted, logged, and the loop lives on: poll, a round, a hand-off, a command, metrics, ' +
    'a background close';
  it(throwTitle, async () => {
    d.deps.settings.metricsFile = '/m.prom';
    writeJob(d.state, d.sentAt(0, { schedule: [0, 100, 200, 300] }));
    d.poll.error = new Error('poll broke');
    d.poll.at(100, () => void (d.pod.closeError = new Error('close broke'))); // round 2's close
    d.poll.at(150, () => void (d.pod.closeError = undefined));
    const jobLog = d.deps.jobLog;
    let jobLogs = 0;
    d.deps.jobLog = (job) => {
      if (++jobLogs === 2) throw new Error('log broke');
      return jobLog(job);
    };
    const c2 = d.sentAt(0, { containerId: 'c2', schedule: [0, 5000] });
    let runs = 0;
    d.runner = async (_env, a) => {
      if (++runs > 1) throw new Error('runner broke');
      writeJob(d.state, c2); // a hosted ADD writes its record, then hands its job over: taking it throws
      a.jobs.added('c2@eth0.json', jobRecord(c2), { sent: NO_FRAMES });
      return { exit: 0, stdout: '' };
    };
    const hosted = d.cniAt(50);
    const command = d.cniAt(60);
    let metricWrites = 0;
    d.deps.writeMetrics = () => {
      if (++metricWrites === 1) throw new Error('disk full');
    };
    d.deps.libc.closeInBackground = (fd, done) => queueMicrotask(() => done?.(new Error(`close ${fd} broke`)));
    const status = d.controlAt(350, STATUS);
    await d.run();
    expect(hosted.client!.lines()).toEqual([{ exit: 0, stdout: '' }]);
    expect([command.client!.lines(), command.client!.ended]).toEqual([[], true]);
    expect(countersOf(status).errors).toBeGreaterThanOrEqual(6);
    // c2's failed hand-off leaves its job in its record, for the next announcer: this one never reads them again.
    expect(d.pod.sent).toHaveLength(3);
    expect(d.records('background work scheduled').map((r) => r.fields.how)).toEqual(['recovered']);
    const failures = new Set(d.records().flatMap((r) => (r.level === 'error' ? [r.msg] : [])));
    const every = ['announcer turn failed', 'background work failed', 'cannot take a job', 'cannot close a socket'];
    every.push('CNI command failed outside dispatch', 'cannot write the metrics file');
    expect(every.filter((what) => !failures.has(what))).toEqual([]);
    expect(d.records().at(-1)!.msg).toBe('announcer stopped');
  });

  it(
    'cleanup never throws: sockets that fail to close are ' + 'counted, the pod sockets of a deferred wait closed',
    async () => {
      d.deps.settings.idleExitMs = 100;
      d.controlAt(0, STATUS);
      writeJob(d.state, d.sentAt(0, deferred(100_000)));
      d.pod.links = [link({ up: false })];
      d.sockets.closeError = new Error('EIO');
      d.signalAt(600, 'SIGTERM');
      expect(await d.run()).toBe('taken');
      expect(d.records('cannot close a control socket').length).toBeGreaterThan(0);
      expect(d.pod.open).toBe(0);
    },
  );

  it('a close koffi refuses runs on this thread, counted', async () => {
    writeJob(d.state, d.sentAt(0, { schedule: [0, 100] }));
    d.deps.libc.closeInBackground = () => {
      throw new Error('too many async calls');
    };
    const status = d.controlAt(200, STATUS);
    await d.run();
    expect(d.closedNow).toEqual(d.pod.released);
    expect([d.closedNow.length, countersOf(status).errors]).toEqual([1, 1]);
  });
});

describe('runDaemon with --listen', () => {
  beforeEach(() => {
    d.deps.listen = parseListenAddress('127.0.0.1:0');
  });

  /** At `at` ms, a GET of `path` on `loop`; the client reads each turn. */
  function getAt(at: number, path: string, loop = d): { client?: HttpClient } {
    const slot: { client?: HttpClient } = {};
    const request = `GET ${path} HTTP/1.1\r\nHost: n\r\n\r\n`;
    loop.poll.at(at, () => void (slot.client = new HttpClient(loop.sockets, PICKED_PORT, request)));
    const before = loop.poll.onPoll;
    loop.poll.onPoll = () => (before(), slot.client?.read());
    return slot;
  }

  /** At `at` ms, a hosted ADD on `loop` whose round 1 sent a GARP request and an NA, and left no job. */
  function reportAt(at: number, loop = d): void {
    loop.runner = async (_env, a) => {
      a.jobs.added('c1@eth0.json', attachmentRecord(), { sent: { garpRequest: 1, garpReply: 0, na: 1 } });
      return { exit: 0, stdout: '' };
    };
    loop.cniAt(at);
  }

  const answersTitle =
    'answers /healthz and /metrics from its loop, in the turn the request came in, and closes the endpoint when it ' +
    'stops';
  it(answersTitle, async () => {
    reportAt(50);
    const health = getAt(100, '/healthz');
    const metrics = getAt(200, '/metrics');
    await d.run();
    expect([health.client!.status, health.client!.body]).toEqual([200, 'ok\n']);
    expect(metrics.client!.status).toBe(200);
    expect(metrics.client!.header('Content-Type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(metrics.client!.body).toContain('cni_announcer_frames_sent_total{kind="na"} 1\n');
    expect(metrics.client!.body).toContain('cni_announcer_rounds_total{outcome="sent"} 1\n');
    expect(d.poll.calls.filter((c) => c.at === 200).length).toBeLessThanOrEqual(2); // answered at the poll that saw it
    expect(d.sockets.paths).toEqual([]); // the TCP listener closed too
    expect(d.records('serving /metrics and /healthz').map((r) => r.fields.port)).toEqual([PICKED_PORT]);
  });

  it('says 503 on /healthz while it hands over (no longer listening on its socket), 200 before', async () => {
    d.cniAt(0); // held, and it has acted: the stop lets it end
    d.poll.at(50, () => d.commands[0]!.gate.acting());
    d.poll.at(100, () => void (d.replaced = true));
    d.cniAt(100, 'b2');
    const before = getAt(50, '/healthz');
    const during = getAt(200, '/healthz');
    d.poll.at(300, () => d.commands[0]!.end({ exit: 0, stdout: '' }));
    await d.run();
    expect([before.client!.status, during.client!.status]).toEqual([200, 503]);
  });

  it('polls the listening socket in every turn, and the idle loop wakes no more often than without it', async () => {
    const plain = new DaemonLoop();
    try {
      for (const loop of [plain, d]) {
        loop.deps.settings.idleExitMs = 5000;
        reportAt(0, loop);
        await loop.run();
      }
      expect(d.poll.calls.map((c) => c.timeoutMs)).toEqual(plain.poll.calls.map((c) => c.timeoutMs));
      const listener = d.poll.calls[0]!.read.find((fd) => !plain.poll.calls[0]!.read.includes(fd));
      expect(listener).toBeDefined();
      expect(d.poll.calls.every((c) => c.read.includes(listener!))).toBe(true);
    } finally {
      plain.state.remove();
    }
  });

  it('cannot bind: logs it, never listens on its socket, and ends with HttpListenError', async () => {
    d.sockets.listen(`tcp:${PICKED_PORT}`); // taken
    await expect(d.run()).rejects.toBeInstanceOf(HttpListenError);
    expect(d.sockets.paths).toEqual([`tcp:${PICKED_PORT}`]);
    const got = d.records('cannot listen for HTTP').map((r) => r.fields.error);
    expect(got).toEqual([expect.stringMatching(/EADDRINUSE/)]);
  });
});

describe('runDaemon with timer stubs that throw: every wait is in its one poll', () => {
  const thrower = (name: string) => () => {
    throw new Error(`${name} called: the announcer's waits go through its poll`);
  };
  beforeEach(() => {
    for (const name of ['setTimeout', 'setInterval']) vi.stubGlobal(name, thrower(name));
    d.timers.sleep = thrower('Timers.sleep');
    d.timers.setTimeout = thrower('ManualTimers.setTimeout');
  });
  afterEach(() => vi.unstubAllGlobals());

  const boundedTitle =
    'bounded work per turn: of five rounds due at once, at most ROUNDS_PER_TURN enter their pods before it polls';
  it(boundedTitle, async () => {
    d.deps.settings.idleExitMs = 300;
    for (const id of ['c1', 'c2', 'c3', 'c4', 'c5'])
      writeJob(d.state, d.sentAt(0, { containerId: id, schedule: [0, 1000] }));
    const openedAtPoll: number[] = [];
    const onPoll = d.poll.onPoll;
    d.poll.onPoll = () => (openedAtPoll.push(d.pod.opened), onPoll());
    await d.run();
    expect(d.pod.sent).toHaveLength(5);
    const steps = openedAtPoll.slice(1).map((n, i) => n - openedAtPoll[i]!);
    expect(Math.max(...steps)).toBe(ROUNDS_PER_TURN);
    // The polls between are not waits: the rest was still due.
    expect(polls().filter((p) => p === '1000+0')).toHaveLength(Math.ceil(5 / ROUNDS_PER_TURN) - 1);
  });

  const budgetTitle =
    "holds rounds back in the node's rate limit (no pod socket open meanwhile) and drops those held past the next " +
    'round, sleeps a command on the loop, backs off in its poll after a failed turn, answers every status meanwhile';
  it(budgetTitle, async () => {
    // Three pods whose rounds 2 and 3 fall due at once: one frame a second lets one round through at a time.
    Object.assign(d.deps.settings, { idleExitMs: 500, rateLimit: { framesPerSecond: 1, burst: 1 } });
    for (const id of ['c1', 'c2', 'c3']) writeJob(d.state, d.sentAt(0, { containerId: id, schedule: [0, 1000, 3000] }));
    let slept = -1;
    d.runner = async (_env, a) => {
      const from = d.timers.now();
      await a.waits.sleep(250);
      slept = d.timers.now() - from;
      return { exit: 0, stdout: '{}' };
    };
    const add = d.cniAt(200);
    d.poll.at(700, () => void (d.poll.error = new Error('poll broke')));
    const openWhileHeld: number[] = [];
    d.poll.at(1500, () => void openWhileHeld.push(d.pod.open));
    const statuses = Array.from({ length: 160 }, (_, i) => d.controlAt(50 * i, STATUS));
    await d.run();
    expect([slept, add.client!.replies.at(-1)!.reply]).toEqual([250, { exit: 0, stdout: '{}' }]);
    // The back-off after the failed turn is the loop's poll with nothing to read, for PAUSE_AFTER_ERROR_MS.
    expect(d.poll.calls.some((c) => c.read.length === 0 && c.write.length === 0 && c.timeoutMs === 100)).toBe(true);
    expect(d.records('announcer turn failed')).toHaveLength(1);
    // Every status is answered within a turn of its asking (the loop never waits elsewhere).
    for (const [i, s] of statuses.entries()) expect(s.client!.replies[0]!.at - 50 * i).toBeLessThanOrEqual(100);
    // Per pod, 2 later rounds planned: each went out or was dropped; the budget held some back, opening nothing.
    const { rateLimited } = countersOf(statuses.at(-1)!);
    expect(d.pod.sent.length + rateLimited.dropped).toBe(3 * 2);
    expect([rateLimited.delayed > 0, rateLimited.dropped > 0, openWhileHeld]).toEqual([true, true, [0]]);
  });
});

describe('the conflict probe in the announcer', () => {
  const probeTitle =
    "does not hold the loop: B's round goes out 500 ms into A's 2 s window, before A's round 1, and a status request " +
    'is answered during it';
  it(probeTitle, async () => {
    const lines: string[] = [];
    // Each job's lines name its container, so that the order of A's and B's rounds shows.
    d.deps.jobLog = (job) => createLogger((line) => lines.push(line), 'debug', { c: job.containerId });
    const kinds = (): string[] => d.pod.sent.map((f) => (f.readUInt32BE(28) === 0 ? 'probe' : 'garp'));
    d.pod.arpFrames = [];
    // A: not ready during ADD; its round 1 probes for 2 s (probes at 0, 667, 1333 ms).
    const conflictCheck = { action: 'warn' as const, probeMs: 2000, probes: 3 };
    writeJob(d.state, d.sentAt(0, { containerId: 'a', ...deferred(10_000), conflictCheck }));
    // B: round 1 sent 500 ms before; its round 2 is due 1000 ms after it, 500 ms into A's window.
    writeJob(d.state, d.sentAt(-500, { containerId: 'b' }));
    const status = d.controlAt(1000, STATUS);
    let sentBefore: string[] | undefined;
    d.poll.at(1001, () => void (sentBefore = kinds()));
    await d.run();
    const announced = logRecords(lines.join('\n')).filter((r) => r.msg === 'announced');
    expect(announced.slice(0, 2).map((r) => `${r.fields.c} ${r.fields.round}`)).toEqual(['b 2', 'a 1']);
    // What went out of the pod: A's first probe, B's round 2, A's two other probes, A's round 1.
    expect(kinds().slice(0, 5)).toEqual(['probe', 'garp', 'probe', 'probe', 'garp']);
    // The probe only looked at its receivers, never waited on them; no poll before B's due time waited past it.
    expect([d.pollInTimeouts.length > 0, new Set(d.pollInTimeouts)]).toEqual([true, new Set([0])]);
    const early = d.poll.calls.filter((p) => p.at < 500);
    expect([early.length > 0, early.filter((p) => p.at + p.timeoutMs > 500)]).toEqual([true, []]);
    // The status was answered in A's window: after its second probe, before its third, A still deferred.
    expect([status.client!.replies[0]!.at <= 1001, sentBefore]).toEqual([true, ['probe', 'garp', 'probe']]);
    expect(answerOf(status)).toMatchObject({
      status: { attachments: expect.arrayContaining([expect.objectContaining({ containerId: 'a', deferred: true })]) },
    });
  });
});

describe('LoopWaits', () => {
  /**
   * Waits on a clock the test moves; `step` settles them as the loop would (`readable` fds) and says which are
   * done.
   */
  function setup() {
    const clock = { now: 100 };
    const done: string[] = [];
    const waits = new LoopWaits(() => clock.now);
    const track = (name: string, p: Promise<void>) => void p.then(() => done.push(name));
    const step = async (readable: number[] = []) => (waits.settle(new Set(readable)), await settle(), [...done]);
    return { waits, clock, track, step };
  }

  it(
    'settles a wait once one of its fds is readable (not ' + 'another fd); fds() lists an fd two waits share once',
    async () => {
      const { waits, track, step } = setup();
      track('a', waits.readable([7, 8], 5000));
      track('b', waits.readable([9], 5000));
      track('c', waits.readable([9], 5000));
      expect(waits.fds()).toEqual([7, 8, 9]);
      expect(await step([10])).toEqual([]);
      expect([await step([8]), waits.fds()]).toEqual([['a'], [9]]);
      expect(await step([9])).toEqual(['a', 'b', 'c']);
    },
  );

  const deadlineTitle =
    'settles at the deadline, not a millisecond before; sleep ' +
    'is a wait without fds; msLeft: until the first deadline, ' +
    '0 once past, Infinity with none; a negative wait is due at once';
  it(deadlineTitle, async () => {
    const { waits, clock, track, step } = setup();
    expect(waits.msLeft()).toBe(Infinity);
    track('read', waits.readable([7], 300));
    track('sleep', waits.sleep(200));
    expect([waits.fds(), waits.msLeft()]).toEqual([[7], 200]);
    clock.now += 199;
    expect(await step()).toEqual([]);
    clock.now += 1;
    expect([await step(), waits.msLeft()]).toEqual([['sleep'], 100]);
    clock.now += 150;
    expect([waits.msLeft(), await step()]).toEqual([0, ['sleep', 'read']]);
    track('now', waits.sleep(-5));
    expect(waits.msLeft()).toBe(0);
  });

  const abortTitle =
    "rejects a wait with its signal's reason once it aborts (its command stopped), and one begun after at once; the " +
    'others wait on; a wait settled before its signal aborts stays settled';
  it(abortTitle, async () => {
    const { waits, clock, track, step } = setup();
    const [stop, early] = [new AbortController(), new AbortController()];
    const stopped = waits.readable([7], 5000, stop.signal);
    track('other', waits.readable([8], 5000));
    track('early', waits.sleep(10, early.signal));
    clock.now += 10;
    expect(await step()).toEqual(['early']);
    early.abort(new Error('late'));
    const reason = new Error('the announcer stops');
    stop.abort(reason);
    await expect(stopped).rejects.toBe(reason);
    await expect(waits.sleep(100, stop.signal)).rejects.toBe(reason);
    expect([waits.fds(), waits.msLeft()]).toEqual([[8], 4990]);
    expect(await step([8])).toEqual(['early', 'other']);
  });
});
