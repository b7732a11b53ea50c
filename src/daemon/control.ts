// The background announcer's control socket in stateDir: connections from
// its own user only, one request per connection, each answered by `handle`.
// An ADD sends its packet socket along with its request (see client.ts).
import type { Logger } from '../log';
import type { Timers } from '../announce/timers';
import { unlinkIfPresent } from '../sys/safe-file';
import { SysError } from '../sys/sys-error';
import type { UnixSockets } from '../sys/unix-socket';
import { withSocketAddress } from './paths';
import { decodeRequest, encodeMessage, MAX_MESSAGE_BYTES, type Reply, type Request } from './protocol';

/** A client that sends nothing within this is dropped. */
const CLIENT_MS = 1000;
/** How long a socket an ADD handed over is kept, so that the ADD's own close is never the last. */
const HOLD_HANDED_OVER_MS = 2000;
/**
 * After accept(2) fails (EMFILE: out of descriptors), the listening socket is left out of the
 * poll this long: it stays readable, and polling it would spin while the clients already
 * accepted are served, timed out and closed, which gives the descriptors back.
 */
export const ACCEPT_PAUSE_MS = 100;

/** What the control socket needs from the process. */
export interface ControlDeps {
  stateDir: string;
  sockets: UnixSockets;
  timers: Timers;
  log: Logger;
  /** The user whose connections are served. */
  uid: number;
  closeInBackground(fd: number): void;
}

/** The listening socket and its connected clients. */
export class ControlSocket {
  private listenFd: number | undefined;
  private readonly clients: { fd: number; until: number }[] = [];
  /** One buffer for every request: a request is read and answered before the next. */
  private readonly receiveBuffer = Buffer.alloc(MAX_MESSAGE_BYTES);
  /** Sockets ADDs handed over, closed once their time comes. */
  private readonly handedOver: { fd: number; at: number }[] = [];
  /** Boot ms before which no connection is accepted (see ACCEPT_PAUSE_MS). */
  private acceptPausedUntil = 0;

  /** `handedListenFd`: the socket, already listening, that the client that started this announcer made; listen() takes it. `failed` counts and logs what went wrong. */
  constructor(
    private readonly deps: ControlDeps,
    private readonly handle: (request: Request) => Reply,
    private handedListenFd: number | undefined,
    private readonly failed: (what: string, error: unknown) => void,
  ) {}

  /** Whether a client is connected. */
  get busy(): boolean {
    return this.clients.length > 0;
  }

  /** The sockets to poll: the listening one (when listening and accepting), then the clients. */
  fds(): number[] {
    const accepting = this.listenFd !== undefined && this.deps.timers.bootMs() >= this.acceptPausedUntil;
    return [...(accepting ? [this.listenFd!] : []), ...this.clients.map((c) => c.fd)];
  }

  /** When the first client times out or accepting resumes (boot ms); Infinity with neither. */
  wakeAt(): number {
    const paused = this.acceptPausedUntil > this.deps.timers.bootMs() ? [this.acceptPausedUntil] : [];
    return Math.min(Infinity, ...paused, ...this.clients.map((c) => c.until));
  }

  listen(): void {
    if (this.handedListenFd !== undefined) {
      [this.listenFd, this.handedListenFd] = [this.handedListenFd, undefined];
      return;
    }
    withSocketAddress(this.deps.stateDir, (address) => {
      unlinkIfPresent(address); // a stale socket of a killed announcer; we hold the lock
      this.listenFd = this.deps.sockets.listen(address);
    });
  }

  unlisten(): void {
    if (this.listenFd === undefined) return;
    const fd = this.listenFd;
    this.listenFd = undefined;
    this.closeQuietly(fd);
    try {
      withSocketAddress(this.deps.stateDir, (address) => unlinkIfPresent(address));
    } catch {
      // the next announcer removes it
    }
  }

  /** Accepts new clients when the listening socket is among `readable`, then serves every client. */
  serve(readable: ReadonlySet<number>): void {
    if (this.listenFd !== undefined && readable.has(this.listenFd)) this.acceptAll();
    for (const client of [...this.clients]) this.serveOne(client);
  }

  /** Closes the handed-over sockets whose time has come (`all`: every one). */
  closeHandedOver(all: boolean): void {
    const now = this.deps.timers.now();
    while (this.handedOver.length > 0 && (all || this.handedOver[0]!.at <= now)) this.deps.closeInBackground(this.handedOver.shift()!.fd);
  }

  /** Closes every client, every handed-over socket and the listening socket. */
  close(): void {
    for (const c of this.clients.splice(0)) this.closeQuietly(c.fd);
    this.closeHandedOver(true);
    this.unlisten();
  }

  private closeQuietly(fd: number): void {
    try {
      this.deps.sockets.close(fd);
    } catch (err) {
      this.failed('cannot close a control socket', err);
    }
  }

  private acceptAll(): void {
    for (;;) {
      let peer;
      try {
        peer = this.deps.sockets.accept(this.listenFd!);
      } catch (err) {
        this.acceptPausedUntil = this.deps.timers.bootMs() + ACCEPT_PAUSE_MS;
        this.failed(`cannot accept a control connection: not accepting for ${ACCEPT_PAUSE_MS} ms`, err);
        return;
      }
      if (!peer) return;
      if (peer.uid !== this.deps.uid) {
        this.deps.log.warn('refused a control connection from another user', { uid: peer.uid, pid: peer.pid });
        this.closeQuietly(peer.fd);
        continue;
      }
      this.clients.push({ fd: peer.fd, until: this.deps.timers.bootMs() + CLIENT_MS });
    }
  }

  private serveOne(client: { fd: number; until: number }): void {
    const buf = this.receiveBuffer;
    let done = true;
    try {
      const got = this.deps.sockets.receive(client.fd, buf);
      if (got === undefined) {
        done = this.deps.timers.bootMs() >= client.until;
        return;
      }
      // An ADD hands over its packet socket: closing the last copy waits for an RCU grace period.
      // Keep ours until that ADD has surely closed its own (so ours is the last), then close it on another thread.
      for (const fd of got.fds) this.handedOver.push({ fd, at: this.deps.timers.now() + HOLD_HANDED_OVER_MS });
      if (got.length === 0) return;
      const request = decodeRequest(buf.subarray(0, got.length));
      const reply: Reply = typeof request === 'string' ? { ok: false, error: request } : this.handle(request);
      this.deps.sockets.send(client.fd, encodeMessage(reply));
    } catch (err) {
      // EPIPE: a client that did not wait for the reply (the ADD that started us queued its request and left).
      if (err instanceof SysError && err.code === 'EPIPE') this.deps.log.debug('control client left before the reply');
      else this.failed('control connection failed', err);
    } finally {
      if (done) {
        this.clients.splice(this.clients.indexOf(client), 1);
        this.closeQuietly(client.fd);
      }
    }
  }
}
