// The announcer's socket (src/daemon/server.ts) over in-memory sockets and a manual clock: connections and request
// lines (answered and closed, bad lines refused naming the problem, overlong or silent ones dropped, other users
// refused, accept failures paused on), CNI commands run side by side to their end, late ones dropped, and the stop: the
// socket cut off, every request answered or passed on, commands that acted stopped ACTED_MS on, all done by STOP_MS.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACCEPT_PAUSE_MS, ACTED_MS, Server } from '../../../src/daemon/server';
import type { Gate } from '../../../src/daemon/admission';
import { MAX_REQUEST_LINE, STOP_MS, type ControlReply, type ControlRequest } from '../../../src/protocol';
import { ANNOUNCER_SOCKET } from '../../../src/state-files';
import { SysError } from '../../../src/sys/sys-error';
import { createLogger } from '../../../src/log';
import { FakePod, makeStateDir, type StateDir } from '../../support/daemon-fakes';
import { FakeSockets, socketCalls } from '../../support/fake-sockets';
import { testAnnouncer } from '../../support/announcer';
import { fakeLibc } from '../../support/fake-libc';
import { logRecords } from '../../support/log-records';
import { ManualTimers, settle } from '../../support/manual-timers';
import { cniLine, controlLine, WireClient } from '../../support/wire-client';

const UID = 1000;

/** A CNI command handed to the announcer, and how the test ends it. */
interface HeldRun {
  env: Record<string, string>;
  stdin: string;
  build: string;
  gate: Gate;
  end(outcome: { exit: number; stdout: string }): void;
  fail(error: unknown): void;
}

let state: StateDir;
let sockets: FakeSockets;
let timers: ManualTimers;
let lines: string[];
/** The control requests handled, the CNI commands run (held), served to their end, and the failures reported. */
let handled: ControlRequest[];
let runs: HeldRun[];
let served: (string | undefined)[];
let failures: [string, unknown][];
/** What cni() refuses with, when set; what control() answers. */
let refuse: string | undefined;
let answer: () => ControlReply;
let server: Server;
let address: string;

beforeEach(() => {
  state = makeStateDir();
  sockets = new FakeSockets();
  sockets.peerUid = UID;
  timers = new ManualTimers();
  [lines, handled, runs, served, failures, refuse] = [[], [], [], [], [], undefined];
  answer = () => ({ ok: true });
  address = join(state.dir, ANNOUNCER_SOCKET);
  const log = createLogger((line) => lines.push(line), 'debug');
  const a = testAnnouncer(state, new FakePod(), timers, {
    libc: fakeLibc(socketCalls(sockets)),
    log,
    failed: (what, error) => void failures.push([what, error]),
    uid: UID,
  });
  server = new Server(a, {
    control: (request) => (handled.push(request), answer()),
    cni: (command) =>
      refuse !== undefined
        ? { refused: refuse }
        : new Promise((end, fail) => void runs.push({ ...command, end, fail })),
    served: (command) => void served.push(command),
  });
  server.listen();
});
afterEach(() => state.remove());

/** One serve() with what poll(2) would report: readable sockets among fds(), writable ones among writeFds(). */
function turn(): void {
  const readable = server.fds().filter((fd) => sockets.readable(fd));
  const writable = server.writeFds().filter((fd) => sockets.writable(fd));
  server.serve(new Set(readable), new Set(writable));
}

/** A client that connects and sends `text` (when given), once served (a turn accepts it and reads what came). */
function client(text?: string | Buffer): WireClient {
  const c = new WireClient(sockets, timers, address);
  if (text !== undefined) c.send(text);
  turn();
  return c;
}

/** The log records with message `msg`. */
const logged = (msg: string) => logRecords(lines.join('\n')).filter((r) => r.msg === msg);
const status = (): string => controlLine({ op: 'status' }, timers.bootMs() + 5000);
/** A CNI request of `command` whose shim waits until `deadline` (boot ms). */
const cni = (command: string, deadline = timers.bootMs() + 9000): string =>
  cniLine({ CNI_COMMAND: command, CNI_CONTAINERID: 'c1' }, '{"cniVersion":"1.0.0"}', deadline);
const OK = { control: { ok: true } };

describe('Server: connections and request lines', () => {
  it('answers a control request with one line, then closes the connection', () => {
    expect(sockets.paths).toEqual([address]);
    const c = client(status()).read();
    expect([handled, c.lines(), c.ended]).toEqual([[{ op: 'status' }], [OK], true]);
    expect([server.busy, server.fds().length, runs.length]).toEqual([false, 1, 0]);
  });

  it('refuses a bad line naming the problem (admission.test.ts lists them), and hands nothing on', () => {
    for (const [line, problem] of [
      ['{"v":', 'not JSON'],
      ['{"v":1,"build":"b","deadline":9,"control":{"op":"reboot"}}', 'unknown op "reboot"'],
    ]) {
      const c = client(`${line}\n`).read();
      expect([line, c.lines(), c.ended]).toEqual([line, [{ refused: problem }], true]);
    }
    expect([handled, runs, failures, server.busy]).toEqual([[], [], [], false]);
  });

  it('reads a line that comes in pieces over several turns, and ignores what follows its newline', () => {
    const line = status();
    const c = client(line.slice(0, 10));
    c.send(line.slice(10, 30));
    turn();
    expect(handled).toEqual([]);
    c.send(`${line.slice(30)}{"more":1}\n`);
    turn();
    expect([c.read().lines(), handled]).toEqual([[OK], [{ op: 'status' }]]);
  });

  it('takes a line of MAX_REQUEST_LINE bytes and drops one a byte longer, unanswered, with a warning', () => {
    const padded = (length: number): string => {
      const bare = status().trimEnd().replace('"control":', '"pad":"","control":');
      return `${bare.replace('"pad":""', `"pad":"${'x'.repeat(length - bare.length)}"`)}\n`;
    };
    expect(padded(MAX_REQUEST_LINE)).toHaveLength(MAX_REQUEST_LINE + 1);
    expect(client(padded(MAX_REQUEST_LINE)).read().lines()).toEqual([OK]);
    const long = client(padded(MAX_REQUEST_LINE + 1)).read();
    expect([long.lines(), long.ended, handled.length]).toEqual([[], true, 1]);
    const got = logged('dropped a request line over the limit').map((r) => [r.level, r.fields.limit]);
    expect(got).toEqual([['warn', MAX_REQUEST_LINE]]);
    // No newline at all: dropped once past the limit, not held on to.
    const endless = client(Buffer.alloc(MAX_REQUEST_LINE + 1, 0x20)).read();
    expect({ ended: endless.ended, busy: server.busy }).toEqual({ ended: true, busy: false });
  });

  it('drops a client that sends nothing once CLIENT_MS is up, not before; one that closes is let go at once', () => {
    const c = client();
    expect({ busy: server.busy, wakeAt: server.wakeAt() }).toEqual({ busy: true, wakeAt: timers.bootMs() + 1000 });
    timers.advance(999);
    turn();
    expect(c.read().ended).toBe(false);
    timers.advance(1);
    turn();
    expect(c.read().ended).toBe(true);
    expect({ busy: server.busy, wakeAt: server.wakeAt() }).toEqual({ busy: false, wakeAt: Infinity });
    client().close();
    turn();
    expect({ busy: server.busy, handled, failures }).toEqual({ busy: false, handled: [], failures: [] });
  });

  it("refuses another user's connection at once, unread", () => {
    sockets.peerUid = UID + 1;
    const c = client(status()).read();
    expect([handled, server.busy, c.lines(), c.ended]).toEqual([[], false, [], true]);
    expect(logged('refused a control connection from another user').map((r) => r.fields.uid)).toEqual([UID + 1]);
  });

  it('serves at most 1024 clients at once: the next is closed at accept', () => {
    const clients = Array.from({ length: 1025 }, () => client());
    expect(clients.slice(0, 1024).every((c) => !c.read().ended)).toBe(true);
    expect(clients[1024]!.read().ended).toBe(true);
  });

  const outOfDescriptorsTitle =
    'out of descriptors (accept fails with EMFILE): leaves the listening socket out of the ' +
    'poll for ACCEPT_PAUSE_MS, serves its clients, then accepts again';
  it(outOfDescriptorsTitle, () => {
    const listenFd = server.fds()[0]!;
    const waiting = client();
    const accept = sockets.accept.bind(sockets);
    sockets.accept = () => {
      sockets.accept = accept;
      throw new SysError('accept4', 24);
    };
    const later = client(status());
    const got = failures.map(([what, err]) => [what, (err as SysError).code]);
    expect(got).toEqual([['cannot accept a control connection: not accepting for 100 ms', 'EMFILE']]);
    expect(server.fds()).toEqual([waiting.fd + 1]); // the client's server end; not the listener
    expect(server.wakeAt()).toBe(timers.bootMs() + ACCEPT_PAUSE_MS);
    waiting.send(status());
    turn();
    expect(waiting.read().lines()).toEqual([OK]);
    timers.advance(ACCEPT_PAUSE_MS - 1);
    expect(server.fds()).toEqual([]);
    timers.advance(1);
    expect(server.fds()).toEqual([listenFd]);
    turn();
    expect(later.read().lines()).toEqual([OK]);
  });

  const closeTitle =
    'close() closes every client and the listening socket; a failing close is reported and the rest still closed';
  it(closeTitle, () => {
    const listenFd = server.fds()[0]!;
    client();
    client();
    sockets.closeError = new Error('EIO');
    server.close();
    expect(sockets.closed).toHaveLength(3);
    expect(sockets.closed).toContain(listenFd);
    expect(failures.map(([what]) => what)).toEqual(Array(3).fill('cannot close a control socket'));
    expect({ busy: server.busy, fds: server.fds() }).toEqual({ busy: false, fds: [] });
  });

  it('a handler that throws is reported and its client dropped; the socket serves on', () => {
    answer = () => {
      throw new Error('handler broke');
    };
    const c = client(status()).read();
    expect({ ended: c.ended, lines: c.lines() }).toEqual({ ended: true, lines: [] });
    const seen = failures.map(([what, err]) => [what, (err as Error).message]);
    expect(seen).toEqual([['control connection failed', 'handler broke']]);
    answer = () => ({ ok: true });
    expect(client(status()).read().lines()).toEqual([OK]);
  });
});

describe('Server: CNI commands', () => {
  it('runs a command and writes only its end, then closes; nothing wakes the loop for it meanwhile', async () => {
    const c = client(cni('ADD')).read();
    expect(runs.map(({ env, stdin, build }) => ({ env, stdin, build }))).toEqual([
      { env: { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c1' }, stdin: '{"cniVersion":"1.0.0"}', build: 'b1' },
    ]);
    timers.advance(3000);
    turn();
    expect([c.read().lines(), server.busy, server.wakeAt()]).toEqual([[], true, Infinity]);
    runs[0]!.end({ exit: 0, stdout: '{"ips":[]}' });
    await settle();
    expect(c.read().lines()).toEqual([{ exit: 0, stdout: '{"ips":[]}' }]);
    expect([c.ended, server.busy, served]).toEqual([true, false, ['ADD']]);
  });

  const lateTitle =
    'drops unrun an ADD or CHECK read at or past its deadline, ' +
    'with a warning; runs a DEL, GC or STATUS however late; ' +
    'a late control request is still answered';
  it(lateTitle, () => {
    const boot = timers.bootMs();
    for (const command of ['ADD', 'CHECK']) expect(client(cni(command, boot)).read().ended).toBe(true);
    expect([runs, served]).toEqual([[], []]);
    const dropped = logged('dropped a command its sender no longer waits for');
    expect(dropped.map((r) => `${r.level} ${r.fields.command}`)).toEqual(['warn ADD', 'warn CHECK']);
    for (const command of ['DEL', 'GC', 'STATUS']) client(cni(command, boot - 10_000)).read();
    expect(runs.map((r) => r.env.CNI_COMMAND)).toEqual(['DEL', 'GC', 'STATUS']);
    const late = client(controlLine({ op: 'status' }, boot - 1));
    expect(late.read().lines()).toEqual([OK]);
  });

  const doesNotPollTitle =
    "does not poll a running command's connection for input (its EOF would keep poll(2) awake), nor a closing one";
  it(doesNotPollTitle, async () => {
    const c = client(cni('ADD'));
    expect(server.fds()).toEqual([server.fds()[0]]); // the listener alone
    c.send('trailing bytes\n');
    expect(server.fds()).not.toContain(c.fd + 1);
    sockets.room = 10;
    runs[0]!.end({ exit: 0, stdout: 'x'.repeat(20) });
    await settle();
    expect(server.writeFds()).toEqual([c.fd + 1]);
    expect(server.fds()).not.toContain(c.fd + 1);
  });

  const leavesTitle =
    'a client that leaves while its command runs is let go quietly when the end finds it gone (EPIPE), and its ADD ' +
    "is no longer wanted; at its deadline neither is one whose client waits; a DEL's always is";
  it(leavesTitle, async () => {
    const boot = timers.bootMs();
    const leaving = client(cni('ADD'));
    client(cni('ADD', boot + 1000));
    client(cni('DEL', boot + 1000));
    const reasons = () => runs.map((r) => r.gate.stopReason());
    expect(reasons()).toEqual([undefined, undefined, undefined]);
    leaving.close();
    expect(reasons()).toEqual(['the caller no longer waits', undefined, undefined]);
    timers.advance(1000);
    expect(reasons()).toEqual(['the caller no longer waits', 'the caller no longer waits', undefined]);
    runs[0]!.end({ exit: 0, stdout: '{}' });
    await settle();
    turn();
    expect([server.busy, failures, logged('client left before its reply').length]).toEqual([true, [], 1]);
  });

  it('writes an end larger than the socket takes at once in pieces, as poll(2) reports room, then closes', async () => {
    const c = client(cni('ADD')).read();
    const stdout = 'y'.repeat(5000);
    sockets.room = 1000;
    runs[0]!.end({ exit: 0, stdout });
    await settle();
    expect(server.writeFds()).toEqual([c.fd + 1]);
    turn(); // the client has not read: no room, nothing moves
    expect(server.writeFds()).toEqual([c.fd + 1]);
    let pieces = 0;
    while (!c.ended && pieces < 20) {
      if (sockets.pending(c.fd)) pieces++;
      c.read();
      turn();
    }
    expect(pieces).toBe(6); // 1000 bytes at a time: the reply line is 5018 bytes
    expect(c.lines()).toEqual([{ exit: 0, stdout }]);
    expect({ busy: server.busy, writeFds: server.writeFds() }).toEqual({ busy: false, writeFds: [] });
  });

  it(
    'drops a client that reads none of its end for ' + 'CLIENT_MS (a stopped shim would keep it busy for ever)',
    async () => {
      const c = client(cni('ADD'));
      sockets.room = 10;
      runs[0]!.end({ exit: 0, stdout: 'z'.repeat(100) });
      await settle();
      expect(server.wakeAt()).toBe(timers.bootMs() + 1000);
      timers.advance(999);
      turn();
      expect(server.busy).toBe(true);
      timers.advance(1);
      turn();
      expect([server.busy, c.read().ended, server.wakeAt()]).toEqual([false, true, Infinity]);
    },
  );

  it('answers a command the announcer refuses with {"refused": why} and closes', () => {
    refuse = 'handover';
    const c = client(cni('ADD')).read();
    expect([c.lines(), c.ended, server.busy, served]).toEqual([[{ refused: 'handover' }], true, false, []]);
  });

  it(
    'a runner that rejects (a bug: dispatch never does) ' + 'is reported, and its client dropped without an end',
    async () => {
      const c = client(cni('ADD')).read();
      runs[0]!.fail(new Error('runner broke'));
      await settle();
      expect([c.read().lines(), c.ended, server.busy, served]).toEqual([[], true, false, []]);
      const got = failures.map(([what, err]) => [what, (err as Error).message]);
      expect(got).toEqual([['CNI command failed outside dispatch', 'runner broke']]);
    },
  );

  it('runs commands side by side: each ends on its own', async () => {
    const [a, b] = [client(cni('ADD')), client(cni('DEL'))];
    runs[1]!.end({ exit: 1, stdout: 'b' });
    await settle();
    expect(b.read().lines()).toEqual([{ exit: 1, stdout: 'b' }]);
    expect([a.read().lines(), server.busy, served]).toEqual([[], true, ['DEL']]);
  });
});

describe('Server: the stop', () => {
  const cutOffTitle =
    'cuts the socket off: a new connect is refused; each queued client is taken in, its CNI request refused with ' +
    'handover (run nowhere), its control request answered; the socket file goes; done once every client is';
  it(cutOffTitle, () => {
    const queuedAdd = new WireClient(sockets, timers, address).send(cni('ADD'));
    const queuedStatus = new WireClient(sockets, timers, address).send(status());
    const slow = new WireClient(sockets, timers, address); // connected, its line not sent yet
    server.stop();
    expect(() => new WireClient(sockets, timers, address)).toThrow(/ECONNREFUSED|ENOENT/);
    expect([sockets.files.has(address), server.done()]).toEqual([false, false]);
    turn();
    expect([queuedAdd.read().lines(), queuedStatus.read().lines()]).toEqual([[{ refused: 'handover' }], [OK]]);
    expect(server.done()).toBe(false); // the slow one still sends its line
    slow.send(cni('DEL'));
    turn();
    expect(slow.read().lines()).toEqual([{ refused: 'handover' }]);
    expect([runs.length, served, server.done(), server.passedOn()]).toEqual([0, [], true, 2]);
  });

  const raceTitle =
    'a caller that connects once the queue is drained, before the listener closes, is refused (the listener was shut ' +
    'down first), never queued to be reset';
  it(raceTitle, () => {
    let late: unknown;
    sockets.onDrained = () => {
      try {
        new WireClient(sockets, timers, address);
      } catch (err) {
        late = err;
      }
    };
    server.stop();
    expect((late as SysError).code).toBe('ECONNREFUSED');
  });

  it('leaves a socket file that is no longer the one it bound (a successor may own it)', () => {
    sockets.unlink(address);
    sockets.files.set(address, { dev: 9, ino: 9 });
    server.stop();
    expect(sockets.files.get(address)).toEqual({ dev: 9, ino: 9 });
  });

  it('lets a client that never sends its line go STOP_MS after the stop, at the latest', () => {
    new WireClient(sockets, timers, address);
    server.stop();
    turn();
    timers.advance(STOP_MS - 1);
    expect(server.done()).toBe(false);
    expect(server.wakeAt()).toBeLessThanOrEqual(timers.bootMs() + 1);
    timers.advance(1);
    expect(server.done()).toBe(true);
  });

  const passesOnTitle =
    "passes on a running command that has not acted (handover at once; its own end is no one's); one that has acted " +
    'runs on and answers; one still running ACTED_MS on is stopped and answers, by STOP_MS';
  it(passesOnTitle, async () => {
    const boot = timers.bootMs();
    const [idle, acted, slow] = ['ADD', 'ADD', 'DEL'].map((c) => client(cni(c)).read());
    const [idleRun, actedRun, slowRun] = runs;
    actedRun!.gate.acting();
    slowRun!.gate.acting();
    server.stop();
    expect(idle!.read().lines()).toEqual([{ refused: 'handover' }]);
    expect(idleRun!.gate.stopReason()).toMatch(/stops: passed on$/);
    expect(idleRun!.gate.signal.aborted).toBe(true);
    expect([actedRun!.gate.stopReason(), slowRun!.gate.stopReason()]).toEqual([undefined, undefined]);
    idleRun!.end({ exit: 0, stdout: 'late' }); // its end is dropped: the next announcer ran it
    actedRun!.end({ exit: 0, stdout: 'ok' });
    await settle();
    turn();
    expect(acted!.read().lines()).toEqual([{ exit: 0, stdout: 'ok' }]);
    expect(idle!.read().lines()).toEqual([{ refused: 'handover' }]); // its end was dropped
    expect(server.wakeAt()).toBe(boot + ACTED_MS);
    timers.advance(ACTED_MS - 1);
    turn();
    expect(slowRun!.gate.stopReason()).toBeUndefined();
    timers.advance(1);
    turn();
    expect(slowRun!.gate.stopReason()).toMatch(/^the announcer \(pid \d+\) stops$/);
    expect(server.done()).toBe(false);
    slowRun!.end({ exit: 1, stdout: 'stopped' });
    await settle();
    turn();
    expect(slow!.read().lines()).toEqual([{ exit: 1, stdout: 'stopped' }]);
    expect([server.done(), served, server.passedOn()]).toEqual([true, ['ADD', 'DEL'], 1]);
    expect(timers.bootMs() - boot).toBeLessThan(STOP_MS);
  });
});
