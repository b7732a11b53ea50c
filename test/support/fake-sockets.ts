// Unix SOCK_STREAM sockets in memory, both ends: listeners by path, a backlog
// of connections with their peer's uid, bytes queued each way, end of stream
// once the other end closes. For the announcer's socket and its clients,
// without a kernel.
import { errnoNumber } from '../../src/sys/sys-error';
import { SysError } from '../../src/sys/sys-error';
import { sameFile, type FileId } from '../../src/sys/file-id';
import type { UnixSockets } from '../../src/sys/unix-socket';

const errno = (name: string): number => errnoNumber(name)!;

interface End {
  peer: number | undefined;
  inbox: Buffer;
  closed: boolean;
}

/** The sockets; tests steer them through the public fields. */
export class FakeSockets implements UnixSockets {
  /** The uid the next connections present (SO_PEERCRED). */
  peerUid = 0;
  /** How many bytes a connection's queue holds (Infinity: no limit); send() takes what fits, 0 when full. */
  room = Infinity;
  /** Thrown by the next connect(), when set. */
  connectError: Error | undefined;
  /** Thrown by close(), when set (the fd is closed all the same). */
  closeError: Error | undefined;
  /** Thrown by recvNow(), when set (a connection reset). */
  receiveError: Error | undefined;
  readonly closed: number[] = [];
  private readonly listeners = new Map<string, { fd: number; backlog: { fd: number; uid: number }[] }>();
  /** The socket files in the file system, by path: a listen() makes one, only their removal takes one away. */
  readonly files = new Map<string, FileId>();
  /** Listeners shut down for reading: connect() is refused, what is queued can still be accepted. */
  private readonly shut = new Set<number>();
  private readonly ends = new Map<number, End>();
  private nextFd = 200;

  /** The paths listened on now. */
  get paths(): string[] {
    return [...this.listeners.keys()];
  }

  listen(path: string): number {
    // A socket file left at `path` is taken as removed first (the listener unlinks a stale one, holding the lock).
    if (this.listeners.has(path)) throw new SysError(`bind ${path}`, errno('EADDRINUSE'));
    const fd = this.nextFd++;
    this.listeners.set(path, { fd, backlog: [] });
    this.files.set(path, { dev: 1, ino: fd });
    return fd;
  }

  shutdownListener(fd: number): void {
    if (![...this.listeners.values()].some((l) => l.fd === fd)) throw new SysError('shutdown', errno('ENOTCONN'));
    this.shut.add(fd);
  }

  socketFile(path: string): FileId {
    const file = this.files.get(path);
    if (!file) throw new SysError(`lstat ${path}`, errno('ENOENT'));
    return file;
  }

  removeSocketFile(path: string, file: FileId): boolean {
    const now = this.files.get(path);
    if (!sameFile(now, file)) return false;
    this.files.delete(path);
    return true;
  }

  /** Removes the socket file at `path` whatever it is (as unlinkIfPresent would). */
  unlink(path: string): void {
    this.files.delete(path);
  }

  /** Runs when accept() finds a listener's backlog empty (once): a caller racing the cut-off, say. */
  onDrained: (() => void) | undefined;

  accept(fd: number): { fd: number; pid: number; uid: number } | undefined {
    const listener = [...this.listeners.values()].find((l) => l.fd === fd);
    if (!listener) throw new SysError('accept', errno('EBADF'));
    const next = listener.backlog.shift();
    if (!next) {
      const drained = this.onDrained;
      this.onDrained = undefined;
      drained?.();
    }
    return next && { fd: next.fd, pid: 4242, uid: next.uid };
  }

  connect(path: string): number {
    const err = this.connectError;
    this.connectError = undefined;
    if (err) throw err;
    const listener = this.listeners.get(path);
    if (!listener) throw new SysError(`connect ${path}`, errno(this.files.has(path) ? 'ECONNREFUSED' : 'ENOENT'));
    if (this.shut.has(listener.fd)) throw new SysError(`connect ${path}`, errno('ECONNREFUSED'));
    const [client, server] = [this.nextFd++, this.nextFd++];
    this.ends.set(client, { peer: server, inbox: Buffer.alloc(0), closed: false });
    this.ends.set(server, { peer: client, inbox: Buffer.alloc(0), closed: false });
    listener.backlog.push({ fd: server, uid: this.peerUid });
    return client;
  }

  send(fd: number, bytes: Uint8Array): number {
    const end = this.end(fd);
    const peer = end.peer === undefined ? undefined : this.ends.get(end.peer);
    if (!peer || peer.closed) throw new SysError('send', errno('EPIPE'));
    const n = Math.max(0, Math.min(bytes.length, this.room - peer.inbox.length));
    peer.inbox = Buffer.concat([peer.inbox, Buffer.from(bytes.subarray(0, n))]);
    return n;
  }

  recvNow(fd: number, buf: Uint8Array): number | undefined {
    if (this.receiveError) throw this.receiveError;
    const end = this.end(fd);
    if (end.inbox.length > 0) {
      const n = Math.min(end.inbox.length, buf.length);
      end.inbox.copy(buf, 0, 0, n);
      end.inbox = end.inbox.subarray(n);
      return n;
    }
    const peer = end.peer === undefined ? undefined : this.ends.get(end.peer);
    return !peer || peer.closed ? 0 : undefined;
  }

  close(fd: number): void {
    this.closed.push(fd);
    const end = this.ends.get(fd);
    if (end) end.closed = true;
    for (const [path, l] of this.listeners) if (l.fd === fd) this.listeners.delete(path);
    if (this.closeError) throw this.closeError;
  }

  /**
   * Whether poll(2) would call `fd` readable: a listener with a connection pending, an end with bytes queued or whose
   * peer closed.
   */
  readable(fd: number): boolean {
    const listener = [...this.listeners.values()].find((l) => l.fd === fd);
    if (listener) return listener.backlog.length > 0;
    const end = this.ends.get(fd);
    if (!end || end.closed) return false;
    const peer = end.peer === undefined ? undefined : this.ends.get(end.peer);
    return end.inbox.length > 0 || !peer || peer.closed;
  }

  /** Whether poll(2) would say `fd` has room to write (an end whose peer closed too: the write then fails). */
  writable(fd: number): boolean {
    const end = this.ends.get(fd);
    if (!end || end.closed) return false;
    const peer = end.peer === undefined ? undefined : this.ends.get(end.peer);
    return !peer || peer.closed || peer.inbox.length < this.room;
  }

  /** Whether `fd` is one of these sockets, open. */
  owns(fd: number): boolean {
    return [...this.listeners.values()].some((l) => l.fd === fd) || (this.ends.has(fd) && !this.ends.get(fd)!.closed);
  }

  /** Whether `fd` has bytes waiting. */
  pending(fd: number): boolean {
    return (this.ends.get(fd)?.inbox.length ?? 0) > 0;
  }

  /** Reads every byte waiting on `fd` as text (a test's client reading its replies). */
  drain(fd: number): string {
    const end = this.end(fd);
    const text = end.inbox.toString('utf8');
    end.inbox = Buffer.alloc(0);
    return text;
  }

  private end(fd: number): End {
    const end = this.ends.get(fd);
    if (!end || end.closed) throw new SysError('socket', errno('EBADF'));
    return end;
  }
}

/** The calls of `s` as plain functions, to merge into a fake libc (each call goes to the instance, overrides too). */
export function socketCalls(s: FakeSockets): UnixSockets {
  return {
    listen: (path) => s.listen(path),
    accept: (fd) => s.accept(fd),
    connect: (path) => s.connect(path),
    send: (fd, bytes) => s.send(fd, bytes),
    recvNow: (fd, buf) => s.recvNow(fd, buf),
    shutdownListener: (fd) => s.shutdownListener(fd),
    socketFile: (path) => s.socketFile(path),
    removeSocketFile: (path, file) => s.removeSocketFile(path, file),
    close: (fd) => s.close(fd),
  };
}
