// The control socket over in-memory sockets: one request per connection from
// our own uid, garbage answered with an error, other users refused, silent
// clients dropped after their time, handed-over fds held, then closed.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACCEPT_PAUSE_MS, ControlSocket, type ControlDeps } from '../../../src/daemon/control';
import { DAEMON_SOCKET } from '../../../src/daemon/paths';
import { decodeReply, encodeMessage, MAX_MESSAGE_BYTES, type Reply, type Request } from '../../../src/daemon/protocol';
import { SysError } from '../../../src/sys/sys-error';
import { keptLog, makeStateDir, type StateDir } from '../../support/daemon-fakes';
import { FakeSockets } from '../../support/fake-sockets';
import { ManualTimers } from '../../support/manual-timers';

const UID = 1000;

let state: StateDir;
let sockets: FakeSockets;
let timers: ManualTimers;
let lines: string[];
let handled: Request[];
let failures: [string, unknown][];
let backgroundClosed: number[];
let deps: ControlDeps;
let control: ControlSocket;
let address: string;

beforeEach(() => {
  state = makeStateDir();
  sockets = new FakeSockets();
  sockets.peerUid = UID;
  timers = new ManualTimers();
  handled = [];
  failures = [];
  backgroundClosed = [];
  const kept = keptLog();
  lines = kept.lines;
  address = join(state.dir, DAEMON_SOCKET);
  deps = { stateDir: state.dir, sockets, timers, log: kept.log, uid: UID, closeInBackground: (fd) => void backgroundClosed.push(fd) };
  control = new ControlSocket(deps, (request) => answer(request), undefined, (what, error) => void failures.push([what, error]));
});
afterEach(() => state.remove());

let answer = (request: Request): Reply => (handled.push(request), { ok: true });

/** Connects, sends `message` (unless undefined), lets the control socket serve, and returns the client fd. */
function ask(message: Uint8Array | undefined, fds: number[] = []): number {
  const fd = sockets.connect(address);
  if (message) sockets.send(fd, message, fds);
  control.serve(new Set(control.fds()));
  return fd;
}

function replyOn(fd: number): Reply | undefined {
  const buf = Buffer.alloc(MAX_MESSAGE_BYTES);
  const got = sockets.receive(fd, buf);
  return got && got.length > 0 ? decodeReply(buf.subarray(0, got.length)) : undefined;
}

describe('ControlSocket', () => {
  it('answers one request per connection, then closes it', () => {
    control.listen();
    expect(sockets.paths).toEqual([address]);
    const fd = ask(encodeMessage({ op: 'status' }));
    expect(handled).toEqual([{ op: 'status' }]);
    expect(replyOn(fd)).toEqual({ ok: true });
    expect(replyOn(fd)).toBeUndefined(); // end of stream: closed after one reply
    expect(control.busy).toBe(false);
    expect(control.fds()).toHaveLength(1);
  });

  it('answers garbage with an error and never hands it on: not JSON, oversized, unknown op', () => {
    control.listen();
    expect(replyOn(ask(Buffer.from('{"op":')))).toEqual({ ok: false, error: 'not JSON' });
    // Larger than a message may be: the kernel cuts it at the buffer, which leaves no JSON.
    const huge = Buffer.from(JSON.stringify({ op: 'status', pad: 'x'.repeat(MAX_MESSAGE_BYTES) }));
    expect(replyOn(ask(huge))).toEqual({ ok: false, error: 'not JSON' });
    expect(replyOn(ask(Buffer.from('{"op":"reboot"}')))).toEqual({ ok: false, error: 'unknown op "reboot"' });
    expect(handled).toEqual([]);
  });

  it("refuses another user's connection at once", () => {
    control.listen();
    sockets.peerUid = UID + 1;
    const fd = ask(encodeMessage({ op: 'status' }));
    expect({ handled, busy: control.busy, reply: replyOn(fd) }).toEqual({ handled: [], busy: false, reply: undefined });
    expect(lines.some((l) => l.includes('refused a control connection from another user') && l.includes('uid=1001'))).toBe(true);
  });

  it('drops a client that sends nothing once its time is up, not before', () => {
    control.listen();
    const fd = ask(undefined);
    expect({ busy: control.busy, wakeAt: control.wakeAt() }).toEqual({ busy: true, wakeAt: timers.bootMs() + 1000 });
    timers.advance(999);
    control.serve(new Set());
    expect(control.busy).toBe(true);
    timers.advance(1);
    control.serve(new Set());
    expect({ busy: control.busy, wakeAt: control.wakeAt() }).toEqual({ busy: false, wakeAt: Infinity });
    expect(sockets.closed).toContain(fd + 1); // our end
  });

  it('serves a client whose request comes on a later turn', () => {
    control.listen();
    const fd = ask(undefined);
    sockets.send(fd, encodeMessage({ op: 'status' }));
    control.serve(new Set());
    expect(replyOn(fd)).toEqual({ ok: true });
  });

  it('a client that closes without a word is let go', () => {
    control.listen();
    const fd = sockets.connect(address);
    sockets.close(fd);
    control.serve(new Set(control.fds()));
    expect({ busy: control.busy, handled }).toEqual({ busy: false, handled: [] });
  });

  it('holds the fds a client hands over for 2 s, then closes them in the background; close() closes them all', () => {
    control.listen();
    ask(encodeMessage({ op: 'status' }), [7, 8]);
    const passed = [...sockets.passed];
    expect(passed).toHaveLength(2);
    timers.advance(1999);
    control.closeHandedOver(false);
    expect(backgroundClosed).toEqual([]);
    timers.advance(1);
    control.closeHandedOver(false);
    expect(backgroundClosed).toEqual(passed);
    ask(encodeMessage({ op: 'status' }), [9]);
    control.close();
    expect(backgroundClosed).toEqual(sockets.passed);
  });

  it('a client that left before the reply is logged at debug, not counted; other failures are', () => {
    control.listen();
    const fd = sockets.connect(address);
    sockets.send(fd, encodeMessage({ op: 'status' }));
    sockets.close(fd);
    control.serve(new Set(control.fds()));
    expect(failures).toEqual([]);
    expect(lines.some((l) => l.includes('DEBUG control client left before the reply'))).toBe(true);
    answer = () => {
      throw new Error('handler broke');
    };
    ask(encodeMessage({ op: 'status' }));
    answer = (request) => (handled.push(request), { ok: true });
    expect(failures.map(([what, err]) => [what, (err as Error).message])).toEqual([['control connection failed', 'handler broke']]);
    expect(control.busy).toBe(false);
  });

  it('takes a listening socket handed over by its starter instead of making one', () => {
    const handed = sockets.listen(address);
    control = new ControlSocket(deps, answer, handed, () => undefined);
    control.listen();
    expect(control.fds()).toEqual([handed]);
    const fd = ask(encodeMessage({ op: 'status' }));
    expect(replyOn(fd)).toEqual({ ok: true });
  });

  it('unlisten stops listening (a connect then fails) and listen starts again; both may repeat', () => {
    control.listen();
    control.unlisten();
    control.unlisten();
    expect(control.fds()).toEqual([]);
    expect(() => sockets.connect(address)).toThrow(SysError);
    control.serve(new Set([123]));
    control.listen();
    expect(control.fds()).toHaveLength(1);
  });

  it('close() closes clients and the listening socket; a failing close is reported and the rest still closed', () => {
    control.listen();
    const listenFd = control.fds()[0]!;
    ask(undefined);
    ask(undefined);
    sockets.closeError = new Error('EIO');
    control.close();
    expect(sockets.closed.filter((fd) => fd !== listenFd)).toHaveLength(2);
    expect(sockets.closed).toContain(listenFd);
    expect(failures.map(([what]) => what)).toEqual(['cannot close a control socket', 'cannot close a control socket', 'cannot close a control socket']);
    expect({ busy: control.busy, fds: control.fds() }).toEqual({ busy: false, fds: [] });
  });

  it('out of descriptors (accept fails with EMFILE): serves its clients, leaves the listening socket out of the poll for a while, then accepts again', () => {
    control.listen();
    const listenFd = control.fds()[0]!;
    const waiting = sockets.connect(address); // accepted before the failure
    sockets.send(waiting, encodeMessage({ op: 'status' }));
    control.serve(new Set(control.fds()));
    const realAccept = sockets.accept.bind(sockets);
    let failOnce = true;
    sockets.accept = (fd) => {
      if (failOnce) {
        failOnce = false;
        throw new SysError('accept4', 24); // EMFILE
      }
      return realAccept(fd);
    };
    const later = sockets.connect(address);
    sockets.send(later, encodeMessage({ op: 'status' }));
    expect(() => control.serve(new Set(control.fds()))).not.toThrow();
    expect(failures.map(([what, err]) => [what, (err as SysError).code])).toEqual([['cannot accept a control connection: not accepting for 100 ms', 'EMFILE']]);
    expect(replyOn(waiting)).toEqual({ ok: true });
    expect(control.fds()).not.toContain(listenFd);
    expect(control.wakeAt()).toBe(timers.bootMs() + ACCEPT_PAUSE_MS);
    timers.advance(ACCEPT_PAUSE_MS);
    expect(control.fds()).toEqual([listenFd]);
    control.serve(new Set(control.fds()));
    expect(replyOn(later)).toEqual({ ok: true });
    expect(handled).toEqual([{ op: 'status' }, { op: 'status' }]);
  });
});
