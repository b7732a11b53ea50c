// The announcer's listening socket in stateDir: listening, accepting (with a
// pause after accept(2) fails), and no longer listening once it hands over.
import type { Timers } from '../announce/timers';
import { unlinkIfPresent } from '../sys/safe-file';
import type { UnixSockets } from '../sys/unix-socket';
import { withSocketAddress } from './paths';

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

  listen(): void {
    withSocketAddress(this.deps.stateDir, (address) => {
      unlinkIfPresent(address); // a stale socket of a killed announcer; we hold the lock
      this.fd = this.deps.sockets.listen(address);
    });
  }

  /**
   * Stops listening: new clients find no one (and start or become the next announcer); connected ones are still served.
   */
  unlisten(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    this.closeQuietly(fd);
    try {
      withSocketAddress(this.deps.stateDir, (address) => unlinkIfPresent(address));
    } catch {
      // the next announcer removes it
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
