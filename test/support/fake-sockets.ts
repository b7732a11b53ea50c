// Unix SOCK_SEQPACKET sockets in memory, both ends: listeners by path, a
// backlog of connections with their peer's uid, messages with attached fds,
// end of stream once the other end closes. For the control socket and its
// clients, without a kernel.
import { errnoNumber } from '../../src/sys/errno';
import { SysError } from '../../src/sys/sys-error';
import type { UnixSockets } from '../../src/sys/unix-socket';

const errno = (name: string): number => errnoNumber(name)!;

interface End {
  peer: number | undefined;
  inbox: { bytes: Buffer; fds: number[] }[];
  closed: boolean;
}

/** The sockets; tests steer them through the public fields. */
export class FakeSockets implements UnixSockets {
  /** The uid the next connections present (SO_PEERCRED). */
  peerUid = 0;
  /** While set, send() finds the socket buffer full. */
  full = false;
  /** Thrown by the next connect(), when set. */
  connectError: Error | undefined;
  /** Thrown by close(), when set (the fd is closed all the same). */
  closeError: Error | undefined;
  readonly closed: number[] = [];
  /** Every fd an attached message handed to the receiver. */
  readonly passed: number[] = [];
  private readonly listeners = new Map<string, { fd: number; backlog: { fd: number; uid: number }[] }>();
  private readonly ends = new Map<number, End>();
  /** Extra references to an fd (a child process that inherited it): close() drops one first. */
  private readonly refs = new Map<number, number>();
  private nextFd = 200;

  /** The paths listened on now. */
  get paths(): string[] {
    return [...this.listeners.keys()];
  }

  listen(path: string): number {
    if (this.listeners.has(path)) throw new SysError(`bind ${path}`, errno('EADDRINUSE'));
    const fd = this.nextFd++;
    this.listeners.set(path, { fd, backlog: [] });
    return fd;
  }

  accept(fd: number): { fd: number; pid: number; uid: number } | undefined {
    const listener = [...this.listeners.values()].find((l) => l.fd === fd);
    if (!listener) throw new SysError('accept', errno('EBADF'));
    const next = listener.backlog.shift();
    return next && { fd: next.fd, pid: 4242, uid: next.uid };
  }

  connect(path: string): number {
    const err = this.connectError;
    this.connectError = undefined;
    if (err) throw err;
    const listener = this.listeners.get(path);
    if (!listener) throw new SysError(`connect ${path}`, errno('ENOENT'));
    const [client, server] = [this.nextFd++, this.nextFd++];
    this.ends.set(client, { peer: server, inbox: [], closed: false });
    this.ends.set(server, { peer: client, inbox: [], closed: false });
    listener.backlog.push({ fd: server, uid: this.peerUid });
    return client;
  }

  send(fd: number, message: Uint8Array, fds: readonly number[] = []): boolean {
    const end = this.end(fd);
    const peer = end.peer === undefined ? undefined : this.ends.get(end.peer);
    if (!peer || peer.closed) throw new SysError('send', errno('EPIPE'));
    if (this.full) return false;
    const copies = fds.map(() => this.nextFd++);
    peer.inbox.push({ bytes: Buffer.from(message), fds: copies });
    return true;
  }

  receive(fd: number, buf: Uint8Array): { length: number; fds: number[] } | undefined {
    const end = this.end(fd);
    const message = end.inbox.shift();
    if (message) {
      // SOCK_SEQPACKET: the part that does not fit is discarded.
      const length = Math.min(message.bytes.length, buf.length);
      message.bytes.copy(buf, 0, 0, length);
      this.passed.push(...message.fds);
      return { length, fds: message.fds };
    }
    const peer = end.peer === undefined ? undefined : this.ends.get(end.peer);
    return !peer || peer.closed ? { length: 0, fds: [] } : undefined;
  }

  /** Another process holds a copy of `fd` from now on: the next close() leaves it open. */
  hold(fd: number): void {
    this.refs.set(fd, (this.refs.get(fd) ?? 0) + 1);
  }

  close(fd: number): void {
    this.closed.push(fd);
    const refs = this.refs.get(fd) ?? 0;
    if (refs > 0) return void this.refs.set(fd, refs - 1);
    const end = this.ends.get(fd);
    if (end) end.closed = true;
    for (const [path, l] of this.listeners) if (l.fd === fd) this.listeners.delete(path);
    if (this.closeError) throw this.closeError;
  }

  /** Whether `fd` has a message waiting. */
  pending(fd: number): boolean {
    return (this.ends.get(fd)?.inbox.length ?? 0) > 0;
  }

  private end(fd: number): End {
    const end = this.ends.get(fd);
    if (!end || end.closed) throw new SysError('socket', errno('EBADF'));
    return end;
  }
}
