// The announcer's listening socket in stateDir: listening, accepting (with a
// pause after accept(2) fails), and the cut-off when the announcer stops.
import type { Timers } from '../announce/timers';
import { unlinkIfPresent } from '../sys/safe-file';
import { withSocketAddress, type UnixSockets } from '../sys/unix-socket';

/**
 * After accept(2) fails (EMFILE), the listening socket is left out of the poll this long: it stays readable, and
 * polling it would spin while the clients already accepted are served and closed, which gives descriptors back.
 */
export const ACCEPT_PAUSE_MS = 100;

/** A connection accept(2) gave, with its peer's credentials. */
export type Accepted = NonNullable<ReturnType<UnixSockets['accept']>>;

/** What the listener needs from the process. */
export interface ListenerDeps {
  stateDir: string;
  sockets: UnixSockets;
  timers: Pick<Timers, 'bootMs'>;
}

/** The listening socket of a stateDir. */
export class Listener {
  private fd: number | undefined;
  /** The socket file this process bound (device and inode): the only one it ever removes. */
  private bound: { dev: number; ino: number } | undefined;
  /** Boot ms before which no connection is accepted (see ACCEPT_PAUSE_MS). */
  private pausedUntil = 0;

  /** `failed` counts and logs what went wrong; `closeQuietly` closes an fd, counting a failure. */
  constructor(
    private readonly deps: ListenerDeps,
    private readonly failed: (what: string, error: unknown) => void,
    private readonly closeQuietly: (fd: number) => void,
  ) {}

  /** Whether the socket is listening. */
  get listening(): boolean {
    return this.fd !== undefined;
  }

  /** The listening socket, when it listens and accepts: for the poll. */
  fds(): number[] {
    return this.fd !== undefined && this.deps.timers.bootMs() >= this.pausedUntil ? [this.fd] : [];
  }

  /** When accepting resumes after a failed accept (boot ms); Infinity when it is not paused. */
  wakeAt(): number {
    return this.pausedUntil > this.deps.timers.bootMs() ? this.pausedUntil : Infinity;
  }

  /** Listens at stateDir's socket path, replacing a stale one a killed announcer left (the caller holds the lock). */
  listen(): void {
    withSocketAddress(this.deps.stateDir, (address) => {
      unlinkIfPresent(address);
      this.fd = this.deps.sockets.listen(address);
      this.bound = this.deps.sockets.socketFile(address);
    });
  }

  /**
   * The cut-off of a stopping announcer: after shutdown(SHUT_RD) no connect(2) can reach the socket, so accepting
   * until none is left hands every caller that got in to `take`; then the socket closes and its path goes (only while
   * it is still the socket this process bound: a successor's must not vanish). A caller from then on finds none
   * (ECONNREFUSED, ENOENT) and starts, or finds, the next announcer. Call it holding the announcer lock.
   */
  cutOff(take: (peer: Accepted) => void): void {
    const fd = this.fd;
    if (fd === undefined) return;
    this.fd = undefined;
    try {
      this.deps.sockets.shutdownListener(fd);
      for (let peer = this.acceptOne(fd); peer; peer = this.acceptOne(fd)) take(peer);
    } finally {
      this.closeQuietly(fd);
      this.removeOwnPath();
    }
  }

  /** Removes the socket's path if it is still the socket this process bound. */
  private removeOwnPath(): void {
    const bound = this.bound;
    this.bound = undefined;
    if (bound === undefined) return;
    try {
      withSocketAddress(this.deps.stateDir, (address) => this.deps.sockets.removeSocketFile(address, bound));
    } catch (err) {
      this.failed('cannot remove the socket', err);
    }
  }

  /** One queued connection, or undefined when none is left (or accept failed: counted, logged). */
  private acceptOne(fd: number): Accepted | undefined {
    try {
      return this.deps.sockets.accept(fd);
    } catch (err) {
      this.failed('cannot accept a queued connection while stopping', err);
      return undefined;
    }
  }

  /** Accepts every waiting connection when the socket is in `readable`, handing each to `take`. */
  acceptAll(readable: ReadonlySet<number>, take: (peer: Accepted) => void): void {
    if (this.fd === undefined || !readable.has(this.fd)) return;
    for (;;) {
      let peer;
      try {
        peer = this.deps.sockets.accept(this.fd);
      } catch (err) {
        this.pausedUntil = this.deps.timers.bootMs() + ACCEPT_PAUSE_MS;
        this.failed(`cannot accept a control connection: not accepting for ${ACCEPT_PAUSE_MS} ms`, err);
        return;
      }
      if (!peer) return;
      take(peer);
    }
  }
}
