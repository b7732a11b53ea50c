// The announcer's socket, its connections and request lines, over in-memory
// sockets: a control request answered and closed, bad lines refused naming
// the problem, an overlong line or a silent client dropped, other users
// refused, accept failures paused on. CNI commands: control-commands.test.ts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACCEPT_PAUSE_MS } from '../../../src/daemon/listener';
import { MAX_REQUEST_LINE, STOP_MS } from '../../../src/shim/wire';
import { SysError } from '../../../src/sys/sys-error';
import { ControlFixture, UID } from '../../support/control-fixture';
import { cniLine, controlLine, WireClient } from '../../support/wire-client';

let f: ControlFixture;
beforeEach(() => {
  f = new ControlFixture();
  f.control.listen();
});
afterEach(() => f.state.remove());

const status = (ackBy = f.timers.bootMs() + 5000): string => controlLine({ op: 'status' }, ackBy);

describe('ControlSocket: connections and request lines', () => {
  it('answers a control request with one line, then closes the connection', () => {
    expect(f.sockets.paths).toEqual([f.address]);
    const c = f.client(status()).read();
    expect(f.handled).toEqual([{ op: 'status' }]);
    expect(c.lines()).toEqual([{ control: { ok: true } }]);
    expect(c.ended).toBe(true);
    expect({ busy: f.control.busy, fds: f.control.fds().length, runs: f.runs.length }).toEqual({
      busy: false,
      fds: 1,
      runs: 0,
    });
  });

  it('refuses a bad line naming the problem, and hands nothing on', () => {
    const cases: [string, string][] = [
      ['{"v":', 'not JSON'],
      ['[1]', 'not an object'],
      ['{"v":2,"build":"b","ackBy":9}', 'protocol version 2 (this announcer speaks 1)'],
      ['{"v":1,"build":7,"ackBy":9,"control":{"op":"status"}}', 'bad build'],
      [`{"v":1,"build":"${'b'.repeat(129)}","ackBy":9,"control":{"op":"status"}}`, 'bad build'],
      ['{"v":1,"build":"b","ackBy":"9","control":{"op":"status"}}', 'bad ackBy'],
      ['{"v":1,"build":"b","ackBy":9,"cni":{"env":{"PATH":"/bin"},"stdin":"{}"}}', 'bad cni.env'],
      ['{"v":1,"build":"b","ackBy":9,"cni":{"env":{"CNI_COMMAND":1},"stdin":"{}"}}', 'bad cni.env'],
      ['{"v":1,"build":"b","ackBy":9,"cni":{"env":{},"stdin":{}}}', 'bad cni.stdin'],
      ['{"v":1,"build":"b","ackBy":9}', 'neither cni nor control'],
      ['{"v":1,"build":"b","ackBy":9,"control":{"op":"reboot"}}', 'unknown op "reboot"'],
    ];
    for (const [line, problem] of cases) {
      const c = f.client(`${line}\n`).read();
      expect([line, c.lines(), c.ended]).toEqual([line, [{ refused: problem }], true]);
    }
    expect({ handled: f.handled, runs: f.runs, failures: f.failures, busy: f.control.busy }).toEqual({
      handled: [],
      runs: [],
      failures: [],
      busy: false,
    });
  });

  it('reads a line that comes in pieces over several turns, and ignores what follows its newline', () => {
    const line = status();
    const c = f.client(line.slice(0, 10));
    f.turn();
    expect(f.handled).toEqual([]);
    c.send(line.slice(10, 30));
    f.turn();
    c.send(`${line.slice(30)}{"more":1}\n`);
    f.turn();
    expect(c.read().lines()).toEqual([{ control: { ok: true } }]);
    expect(f.handled).toEqual([{ op: 'status' }]);
  });

  it('takes a line of MAX_REQUEST_LINE bytes and drops one a byte longer, unanswered, with a warning', () => {
    const padded = (length: number): string => {
      const bare = controlLine({ op: 'status', pad: '' }, f.timers.bootMs() + 5000).trimEnd();
      return `${bare.replace('"pad":""', `"pad":"${'x'.repeat(length - bare.length)}"`)}\n`;
    };
    expect(padded(MAX_REQUEST_LINE)).toHaveLength(MAX_REQUEST_LINE + 1);
    expect(f.client(padded(MAX_REQUEST_LINE)).read().lines()).toEqual([{ control: { ok: true } }]);
    const long = f.client(padded(MAX_REQUEST_LINE + 1)).read();
    expect({ lines: long.lines(), ended: long.ended, handled: f.handled.length }).toEqual({
      lines: [],
      ended: true,
      handled: 1,
    });
    expect(f.logged('dropped a request line over the limit')).toHaveLength(1);
    // No newline at all: dropped once past the limit, not held on to.
    const endless = f.client(Buffer.alloc(MAX_REQUEST_LINE + 1, 0x20)).read();
    expect({ ended: endless.ended, busy: f.control.busy }).toEqual({ ended: true, busy: false });
  });

  it('drops a client that sends nothing once CLIENT_MS is up, not before', () => {
    const c = f.client();
    expect({ busy: f.control.busy, wakeAt: f.control.wakeAt() }).toEqual({
      busy: true,
      wakeAt: f.timers.bootMs() + 1000,
    });
    f.timers.advance(999);
    f.turn();
    expect(c.read().ended).toBe(false);
    f.timers.advance(1);
    f.turn();
    expect(c.read().ended).toBe(true);
    expect({ busy: f.control.busy, wakeAt: f.control.wakeAt() }).toEqual({ busy: false, wakeAt: Infinity });
  });

  it("refuses another user's connection at once, unread", () => {
    f.sockets.peerUid = UID + 1;
    const c = f.client(status()).read();
    expect({ handled: f.handled, busy: f.control.busy, lines: c.lines(), ended: c.ended }).toEqual({
      handled: [],
      busy: false,
      lines: [],
      ended: true,
    });
    expect(
      f.logged('refused a control connection from another user').filter((l) => l.includes('uid=1001')),
    ).toHaveLength(1);
  });

  it('lets go of a client that closes without a word', () => {
    const c = f.client();
    c.close();
    f.turn();
    expect({ busy: f.control.busy, handled: f.handled, failures: f.failures }).toEqual({
      busy: false,
      handled: [],
      failures: [],
    });
  });

  it('serves at most 1024 clients at once: the next is closed at accept', () => {
    const clients = Array.from({ length: 1025 }, () => f.client());
    expect(clients.slice(0, 1024).every((c) => !c.read().ended)).toBe(true);
    expect(clients[1024]!.read().ended).toBe(true);
  });

  const outOfDescriptorsTitle =
    'out of descriptors (accept fails with EMFILE): leaves the listening socket out of the ' +
    'poll for ACCEPT_PAUSE_MS, serves its clients, then accepts again';
  it(outOfDescriptorsTitle, () => {
    const listenFd = f.control.fds()[0]!;
    const waiting = f.client();
    const accept = f.sockets.accept.bind(f.sockets);
    f.sockets.accept = () => {
      f.sockets.accept = accept;
      throw new SysError('accept4', 24);
    };
    const later = f.client(status());
    expect(f.failures.map(([what, err]) => [what, (err as SysError).code])).toEqual([
      ['cannot accept a control connection: not accepting for 100 ms', 'EMFILE'],
    ]);
    expect(f.control.fds()).toEqual([waiting.fd + 1]); // the client's server end; not the listener
    expect(f.control.wakeAt()).toBe(f.timers.bootMs() + ACCEPT_PAUSE_MS);
    waiting.send(status());
    f.turn();
    expect(waiting.read().lines()).toEqual([{ control: { ok: true } }]);
    f.timers.advance(ACCEPT_PAUSE_MS - 1);
    expect(f.control.fds()).toEqual([]);
    f.timers.advance(1);
    expect(f.control.fds()).toEqual([listenFd]);
    f.turn(); // accepts
    f.turn(); // reads
    expect(later.read().lines()).toEqual([{ control: { ok: true } }]);
  });

  const stopCutsOffTitle =
    'stop cuts the socket off: a new connect is refused; each queued client is taken in, its CNI request refused ' +
    'with handover (run nowhere), its control request answered; the socket file goes; done once every client is';
  it(stopCutsOffTitle, () => {
    const deadline = f.timers.bootMs() + 5000;
    const queuedAdd = new WireClient(f.sockets, f.timers, f.address).send(
      cniLine({ CNI_COMMAND: 'ADD' }, '{}', deadline, 'b1', deadline),
    );
    const queuedStatus = new WireClient(f.sockets, f.timers, f.address).send(status());
    const slow = new WireClient(f.sockets, f.timers, f.address); // connected, its line not sent yet
    f.control.stop();
    expect(() => new WireClient(f.sockets, f.timers, f.address)).toThrow(/ECONNREFUSED|ENOENT/);
    expect(f.sockets.files.has(f.address)).toBe(false);
    expect(f.control.done()).toBe(false);
    f.turn();
    expect(queuedAdd.read().lines()).toEqual([{ refused: 'handover' }]);
    expect(queuedStatus.read().lines()).toEqual([{ control: { ok: true } }]);
    expect(f.control.done()).toBe(false); // the slow one still sends its line
    slow.send(cniLine({ CNI_COMMAND: 'DEL' }, '{}', deadline, 'b1', deadline));
    f.turn();
    expect(slow.read().lines()).toEqual([{ refused: 'handover' }]);
    expect({ runs: f.runs.length, served: f.served, done: f.control.done() }).toEqual({
      runs: 0,
      served: [],
      done: true,
    });
    expect(f.control.passedOn()).toBe(2);
  });

  const raceTitle =
    'a caller that connects once the queue is drained, before the listener closes, is refused (the listener was shut ' +
    'down first), never queued to be reset';
  it(raceTitle, () => {
    let late: unknown;
    f.sockets.onDrained = () => {
      try {
        new WireClient(f.sockets, f.timers, f.address);
      } catch (err) {
        late = err;
      }
    };
    f.control.stop();
    expect((late as SysError).code).toBe('ECONNREFUSED');
  });

  it('stop leaves a socket file that is no longer the one it bound (a successor may own it)', () => {
    f.sockets.unlink(f.address);
    f.sockets.files.set(f.address, { dev: 9, ino: 9 });
    f.control.stop();
    expect(f.sockets.files.get(f.address)).toEqual({ dev: 9, ino: 9 });
  });

  it('a client that never sends its line is let go STOP_MS after the stop, at the latest', () => {
    new WireClient(f.sockets, f.timers, f.address);
    f.control.stop();
    f.turn();
    f.timers.advance(STOP_MS - 1);
    expect(f.control.done()).toBe(false);
    expect(f.control.wakeAt()).toBeLessThanOrEqual(f.timers.bootMs() + 1);
    f.timers.advance(1);
    expect(f.control.done()).toBe(true);
  });

  const closeClosesEveryTitle =
    'close() closes every client and the listening socket; a failing close is reported and the rest still closed';
  it(closeClosesEveryTitle, () => {
    const listenFd = f.control.fds()[0]!;
    f.client();
    f.client();
    f.sockets.closeError = new Error('EIO');
    f.control.close();
    expect(f.sockets.closed).toHaveLength(3);
    expect(f.sockets.closed).toContain(listenFd);
    expect(f.failures.map(([what]) => what)).toEqual(Array(3).fill('cannot close a control socket'));
    expect({ busy: f.control.busy, fds: f.control.fds() }).toEqual({ busy: false, fds: [] });
  });

  it('a handler that throws is reported and its client dropped; the socket serves on', () => {
    f.answer = () => {
      throw new Error('handler broke');
    };
    const c = f.client(status()).read();
    expect({ ended: c.ended, lines: c.lines() }).toEqual({ ended: true, lines: [] });
    expect(f.failures.map(([what, err]) => [what, (err as Error).message])).toEqual([
      ['control connection failed', 'handler broke'],
    ]);
    f.answer = () => ({ ok: true });
    expect(f.client(status()).read().lines()).toEqual([{ control: { ok: true } }]);
  });
});
