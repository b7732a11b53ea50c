// The announcer's stream socket in stateDir: connections from its own user only, one request line per connection
// (src/protocol.ts). A control request is answered at once. A CNI command is taken or dropped as admission.ts says,
// runs beside every other, and its end closes the connection. Reads and writes never block: what the socket cannot
// take now waits for poll(2) to say it has room.
//
// When the announcer stops, the socket is cut off (Server.cutOff): what was queued is accepted, and every request is
// answered or passed on. A CNI command that has not acted yet is refused with `handover` (its shim sends it to the
// next announcer); one that has acted runs on until ACTED_MS after the stop, then is stopped (it undoes what it can
// and answers); a control request is answered. By STOP_MS after the stop every client is done with.
import {
  encodeLine,
  MAX_REQUEST_LINE,
  STOP_MS,
  type ControlReply,
  type ControlRequest,
  type WireReply,
} from '../protocol';
import { SysError } from '../sys/sys-error';
import { withSocketAddress, type UnixSockets } from '../sys/unix-socket';
import type { FileId } from '../sys/file-id';
import { checkRequestLine, droppedLate, Gate, wantedWhile, type CniCommand } from './admission';
import type { Announcer } from './daemon';
import type { Caller } from './host';
import { unlinkIfPresent } from '../sys/safe-file';

/** A client whose request line is not in within this is dropped. */
const CLIENT_MS = 1000;
/** Connections served at once; more are closed at accept. */
const MAX_CLIENTS = 1024;
/**
 * How long after the stop a command that has acted may still run: then it is stopped, and STOP_MS - ACTED_MS is left
 * for it to undo what it did and answer.
 */
export const ACTED_MS = 1500;

/** What the announcer does with a request. */
export interface RequestHandlers {
  control(request: ControlRequest): ControlReply;
  /**
   * Runs a CNI command of `caller` (its paths resolve as it sees them); `refused` when this announcer does not take it
   * (`handover`: a newer build is to serve).
   */
  cni(command: CniCommand, caller: Caller): { refused: string } | Promise<{ exit: number; stdout: string }>;
  /** A CNI command ran to its end here, and its client heard how (not passed on). */
  served(command: string | undefined): void;
}

/** How the socket's stop goes: when commands that acted are stopped, and when every client is let go (boot ms). */
interface Stopping {
  actedBy: number;
  by: number;
  actedStopped: boolean;
  passedOn: number;
}

/**
 * After accept(2) fails (EMFILE), the listening socket is left out of the poll this long: it stays readable, and
 * polling it would spin while the clients already accepted are served and closed, which gives descriptors back.
 */
export const ACCEPT_PAUSE_MS = 100;

/** What an endpoint's log lines call the failures of its connections. */
interface EndpointLines {
  accept: string;
  failed: string;
  close: string;
  /** Said (at debug) when a client left before its reply; nothing when absent. */
  left?: string;
}

/**
 * What the announcer's two listening sockets (its unix socket here, and the HTTP endpoint) share: their clients, each
 * closed once it leaves, fails or outstays its time, and accepting paused for ACCEPT_PAUSE_MS after accept(2) fails.
 */
export abstract class Endpoint<C extends { fd: number }> {
  protected readonly clients = new Set<C>();
  /** Boot ms before which no connection is accepted (see ACCEPT_PAUSE_MS). */
  private acceptPausedUntil = 0;

  constructor(
    protected readonly a: Announcer,
    private readonly lines: EndpointLines,
  ) {}

  /** The listening socket `listenFd` for the poll, unless accepting is paused (or it does not listen). */
  protected accepting(listenFd: number | undefined): number[] {
    return listenFd !== undefined && this.a.timers.bootMs() >= this.acceptPausedUntil ? [listenFd] : [];
  }

  /** When accepting resumes after a failed accept (boot ms); Infinity when it is not paused. */
  protected acceptResumesAt(): number {
    return this.acceptPausedUntil > this.a.timers.bootMs() ? this.acceptPausedUntil : Infinity;
  }

  /** Hands every connection `accept` gives to `take`, until none is left or accept fails (accepting pauses). */
  protected acceptAll<P>(accept: () => P | undefined, take: (peer: P) => void): void {
    for (;;) {
      let peer: P | undefined;
      try {
        peer = accept();
      } catch (err) {
        this.acceptPausedUntil = this.a.timers.bootMs() + ACCEPT_PAUSE_MS;
        this.a.failed(`${this.lines.accept}: not accepting for ${ACCEPT_PAUSE_MS} ms`, err);
        return;
      }
      if (peer === undefined) return;
      take(peer);
    }
  }

  /** Runs `work` on a client; a throw (EPIPE, ECONNRESET: the client left) drops it. */
  protected guarded(client: C, work: () => unknown): void {
    try {
      work();
    } catch (err) {
      if (!(err instanceof SysError && (err.code === 'EPIPE' || err.code === 'ECONNRESET')))
        this.a.failed(this.lines.failed, err);
      else if (this.lines.left) this.a.log.debug(this.lines.left);
      this.drop(client);
    }
  }

  protected drop(client: C): void {
    if (this.clients.delete(client)) this.closeQuietly(client.fd);
  }

  protected closeQuietly(fd: number): void {
    try {
      this.a.libc.close(fd);
    } catch (err) {
      this.a.failed(this.lines.close, err);
    }
  }
}

/** Sends `bytes` on `fd` until the socket is full; what is left to send. */
export function sendSome(sockets: UnixSockets, fd: number, bytes: Buffer): Buffer {
  let left = bytes;
  while (left.length > 0) {
    const n = sockets.send(fd, left);
    if (n === 0) break;
    left = left.subarray(n);
  }
  return left;
}

/** A connection accept(2) gave, with its peer's credentials. */
type Accepted = NonNullable<ReturnType<UnixSockets['accept']>>;

/** The listening socket and its connected clients. */
export class Server extends Endpoint<Connection> {
  /** The CNI commands running, by client, with their gates; one the stop passed on leaves (its end is no one's). */
  private readonly running = new Map<Connection, Gate>();
  private readonly scratch = Buffer.alloc(64 * 1024);
  private stopping: Stopping | undefined;
  private acceptedCount = 0;
  private listenFd: number | undefined;
  /** The socket file this process bound (device and inode): the only one it ever removes. */
  private bound: FileId | undefined;

  /** Serves connections of the announcer `a`'s user (its uid) on its socket. */
  constructor(
    a: Announcer,
    private readonly handlers: RequestHandlers,
  ) {
    super(a, {
      accept: 'cannot accept a control connection',
      failed: 'control connection failed',
      close: 'cannot close a control socket',
      left: 'client left before its reply',
    });
  }

  /** Whether a client is connected or a command runs. */
  get busy(): boolean {
    return this.clients.size > 0;
  }

  /** How many connections it has served: one that came and went within a turn is activity too (the idle exit). */
  get accepted(): number {
    return this.acceptedCount;
  }

  /** Whether the socket is listening. */
  get listening(): boolean {
    return this.listenFd !== undefined;
  }

  /**
   * The sockets to poll for input: the listening one (when listening and accepting), then the clients whose request is
   * still coming.
   */
  fds(): number[] {
    return [...this.accepting(this.listenFd), ...[...this.clients].filter((c) => this.reading(c)).map((c) => c.fd)];
  }

  /** Whether `client`'s request is still coming (a running or ending client is not read: its EOF would wake poll). */
  private reading(client: Connection): boolean {
    return !this.running.has(client) && !client.closing;
  }

  /** The clients whose replies wait for room in their socket. */
  writeFds(): number[] {
    return [...this.clients].filter((c) => c.outbound.length > 0).map((c) => c.fd);
  }

  /**
   * When the next client times out (reading its request, or its end), accepting resumes or the stop moves on (boot
   * ms); Infinity with none.
   */
  wakeAt(): number {
    const timed = [...this.clients].filter((c) => this.reading(c) || c.closing).map((c) => c.until);
    const stop = this.stopping ? [this.stopping.actedStopped ? this.stopping.by : this.stopping.actedBy] : [];
    return Math.min(this.acceptResumesAt(), ...timed, ...stop);
  }

  /** Listens at stateDir's socket path, replacing a stale one a killed announcer left (the caller holds the lock). */
  listen(): void {
    withSocketAddress(this.a.stateDir, (address) => {
      unlinkIfPresent(address);
      this.listenFd = this.a.libc.listen(address);
      this.bound = this.a.libc.socketFile(address);
    });
  }

  /**
   * The stop (see the top of this file): cuts the socket off, takes in what was queued, and passes on every CNI command
   * that has not acted yet. Then serve() goes on until done() says every client is done with.
   */
  stop(): void {
    if (this.stopping) return;
    const now = this.a.timers.bootMs();
    this.stopping = { actedBy: now + ACTED_MS, by: now + STOP_MS, actedStopped: false, passedOn: 0 };
    this.cutOff((peer) => this.admit(peer));
    for (const [client, gate] of this.running) if (!gate.acted) this.passOn(client, gate);
  }

  /** Whether the stop is over: no client left, or STOP_MS has passed (those left are closed). */
  done(): boolean {
    if (!this.stopping) return false;
    return this.clients.size === 0 || this.a.timers.bootMs() >= this.stopping.by;
  }

  /** How many CNI requests the stop passed on to the next announcer (undefined: no stop), for its last log line. */
  passedOn(): number | undefined {
    return this.stopping?.passedOn;
  }

  /**
   * Accepts new clients, reads requests, writes what waits, drops clients past their time; while stopping, stops the
   * commands that acted once ACTED_MS has passed.
   */
  serve(readable: ReadonlySet<number>, writable: ReadonlySet<number>): void {
    // A client accepted now is read at once too: its request may be in already (it waited in the backlog).
    const fresh = new Set<number>();
    const listenFd = this.listenFd;
    if (listenFd !== undefined && readable.has(listenFd))
      this.acceptAll(
        () => this.a.libc.accept(listenFd),
        (peer) => {
          fresh.add(peer.fd);
          this.admit(peer);
        },
      );
    const now = this.a.timers.bootMs();
    if (this.stopping && !this.stopping.actedStopped && now >= this.stopping.actedBy) {
      // The commands that have acted are stopped: their waits end, they undo what they can and answer.
      this.stopping.actedStopped = true;
      for (const gate of this.running.values()) gate.stop(`the announcer (pid ${process.pid}) stops`);
    }
    for (const client of [...this.clients]) {
      if (writable.has(client.fd)) this.guarded(client, () => this.flush(client));
      if (!this.clients.has(client)) continue;
      if (this.reading(client) && (readable.has(client.fd) || fresh.has(client.fd)))
        this.guarded(client, () => this.readRequest(client));
      else if ((this.reading(client) || client.closing) && now >= client.until) this.drop(client);
    }
  }

  /** Closes every client and the listening socket (the stop is over; a killed one leaves its socket to the next). */
  close(): void {
    for (const c of [...this.clients]) this.drop(c);
    this.cutOff((peer) => this.closeQuietly(peer.fd));
  }

  /**
   * The cut-off of a stopping announcer: after shutdown(SHUT_RD) no connect(2) can reach the socket, so accepting
   * until none is left hands every caller that got in to `take`; then the socket closes and its path goes (only while
   * it is still the socket this process bound: a successor's must not vanish). A caller from then on finds none
   * (ECONNREFUSED, ENOENT) and starts, or finds, the next announcer. Call it holding the announcer lock.
   */
  private cutOff(take: (peer: Accepted) => void): void {
    const fd = this.listenFd;
    if (fd === undefined) return;
    this.listenFd = undefined;
    try {
      this.a.libc.shutdownListener(fd);
      for (let peer = this.acceptQueued(fd); peer; peer = this.acceptQueued(fd)) take(peer);
    } finally {
      this.closeQuietly(fd);
      const bound = this.bound;
      this.bound = undefined;
      try {
        if (bound) withSocketAddress(this.a.stateDir, (address) => this.a.libc.removeSocketFile(address, bound));
      } catch (err) {
        this.a.failed('cannot remove the socket', err);
      }
    }
  }

  /** One queued connection, or undefined when none is left (or accept failed: counted, logged). */
  private acceptQueued(fd: number): Accepted | undefined {
    try {
      return this.a.libc.accept(fd);
    } catch (err) {
      this.a.failed('cannot accept a queued connection while stopping', err);
      return undefined;
    }
  }

  /** Counts a request passed on to the next announcer (while stopping). */
  private countPassedOn(): void {
    if (this.stopping) this.stopping.passedOn++;
  }

  /** Refuses a command that has not acted with `handover`: its shim sends it to the next announcer. */
  private passOn(client: Connection, gate: Gate): void {
    gate.stop(`the announcer (pid ${process.pid}) stops: passed on`);
    this.running.delete(client);
    if (!this.clients.has(client)) return;
    this.countPassedOn();
    this.guarded(client, () => this.end(client, { refused: 'handover' }));
  }

  private readRequest(client: Connection): void {
    const got = client.read(this.a.libc, this.scratch, MAX_REQUEST_LINE);
    if (got === 'pending') return;
    if (got === 'closed') return this.drop(client);
    if (got === 'too long') {
      this.a.log.warn('dropped a request line over the limit', { pid: client.pid, limit: MAX_REQUEST_LINE });
      return this.drop(client);
    }
    const request = checkRequestLine(got.line);
    if (typeof request === 'string') return this.end(client, { refused: request });
    // A control request is safe to act on late.
    if (request.kind === 'control') return this.end(client, { control: this.handlers.control(request.request) });
    const command = request.env.CNI_COMMAND;
    const { deadline } = request;
    if (droppedLate(command) && this.a.timers.bootMs() >= deadline) {
      this.a.log.warn('dropped a command its sender no longer waits for', { pid: client.pid, command });
      return this.drop(client);
    }
    if (this.stopping) {
      this.countPassedOn();
      return this.end(client, { refused: 'handover' });
    }
    const connected = (): boolean => this.clients.has(client) && !client.peerGone(this.a.libc, this.scratch);
    const gate = new Gate(wantedWhile(command, deadline, () => this.a.timers.bootMs(), connected));
    const taken = this.handlers.cni({ ...request, gate }, { pid: client.pid, connected });
    if ('refused' in taken) {
      // The request of a new build that made this announcer stop is passed on, as those after it.
      if (taken.refused === 'handover') this.countPassedOn();
      return this.end(client, taken);
    }
    this.running.set(client, gate);
    taken.then(
      (done) => this.finish(client, command, done),
      (err: unknown) => {
        this.a.failed('CNI command failed outside dispatch', err);
        this.finish(client, command, undefined);
      },
    );
  }

  /** A command's end, written to its client unless the stop passed it on meanwhile (its shim asks the next one). */
  private finish(client: Connection, command: string | undefined, done: { exit: number; stdout: string } | undefined) {
    if (!this.running.delete(client)) return;
    if (done !== undefined) this.handlers.served(command);
    if (!this.clients.has(client)) return;
    // Dispatch never rejects, so this is a bug's path: the client sees the connection end.
    if (done === undefined) return this.drop(client);
    this.guarded(client, () => this.end(client, done));
  }

  /** Writes the last line; the connection closes once it is out, or CLIENT_MS on if the client reads none of it. */
  private end(client: Connection, reply: WireReply): void {
    client.closing = true;
    client.until = this.a.timers.bootMs() + CLIENT_MS;
    client.outbound = Buffer.from(encodeLine(reply));
    this.flush(client);
  }

  /** Sends what the socket takes of a client's last line; the connection closes once it is all out. */
  private flush(client: Connection): void {
    client.outbound = sendSome(this.a.libc, client.fd, client.outbound);
    if (client.outbound.length === 0 && client.closing) this.drop(client);
  }

  /**
   * Serves an accepted connection: only from our own user, and at most MAX_CLIENTS at once (one over them is closed; a
   * stopping announcer takes every queued one, so none goes unanswered for want of room).
   */
  private admit(peer: Accepted): void {
    if (peer.uid !== this.a.uid)
      this.a.log.warn('refused a control connection from another user', { uid: peer.uid, pid: peer.pid });
    else if (this.clients.size < MAX_CLIENTS || this.stopping) {
      this.acceptedCount++;
      this.clients.add(new Connection(peer.fd, peer.pid, this.a.timers.bootMs() + CLIENT_MS));
      return;
    }
    this.closeQuietly(peer.fd);
  }
}

/**
 * What reading found: a complete request line, nothing complete yet, the end of the stream, or a line past the limit.
 */
type ReadOutcome = { line: string } | 'pending' | 'closed' | 'too long';

/** A connected client: its socket, its pid (SO_PEERCRED), and the bytes in flight. */
class Connection {
  private inbound: Buffer[] = [];
  private inboundBytes = 0;
  /** The bytes of its last line not sent yet. */
  outbound: Buffer = Buffer.alloc(0);
  /** Whether the connection closes once everything written is sent. */
  closing = false;

  /** `until`: boot ms by which the request line must be in. */
  constructor(
    readonly fd: number,
    readonly pid: number,
    public until: number,
  ) {}

  /**
   * Reads what is queued (into `scratch`) up to the first newline; bytes past it are ignored (one request per
   * connection).
   */
  read(sockets: UnixSockets, scratch: Buffer, maxLine: number): ReadOutcome {
    for (;;) {
      const n = sockets.recvNow(this.fd, scratch);
      if (n === undefined) return 'pending';
      if (n === 0) return 'closed';
      const chunk = scratch.subarray(0, n);
      const newline = chunk.indexOf(0x0a);
      const take = newline < 0 ? chunk : chunk.subarray(0, newline);
      if (this.inboundBytes + take.length > maxLine) return 'too long';
      this.inbound.push(Buffer.from(take));
      this.inboundBytes += take.length;
      if (newline >= 0) {
        const line = Buffer.concat(this.inbound, this.inboundBytes).toString('utf8');
        this.inbound = [];
        this.inboundBytes = 0;
        return { line };
      }
    }
  }

  /**
   * Whether the client has closed its end or reset it (its request taken, it waits for the end and writes nothing
   * more): reads what is queued past the request line, which is ignored anyway.
   */
  peerGone(sockets: UnixSockets, scratch: Buffer): boolean {
    try {
      for (;;) {
        const n = sockets.recvNow(this.fd, scratch);
        if (n === undefined) return false;
        if (n === 0) return true;
      }
    } catch {
      return true; // ECONNRESET
    }
  }
}
