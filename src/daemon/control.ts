// The announcer's stream socket in stateDir: connections from its own user
// only, one request line per connection (src/shim/wire.ts). A control request
// is answered at once. A CNI command is taken or dropped as admission.ts says,
// runs beside every other, and its end closes the connection. A request
// without `deadline` (an older shim) hears `ack`, then a `beat` every BEAT_MS.
import type { Logger } from '../log';
import type { Timers } from '../announce/timers';
import { SysError } from '../sys/sys-error';
import type { UnixSockets } from '../sys/unix-socket';
import { BEAT_MS, encodeReply, MAX_REQUEST_LINE, type WireReply } from '../shim/wire';
import { tooLate, wantedWhile, type CniCommand } from './admission';
import type { Caller } from './caller-host';
import { Connection } from './connection';
import { type Accepted, Listener } from './listener';
import type { Reply, Request } from './protocol';
import { checkRequestLine } from './wire-request';

/** A client whose request line is not in within this is dropped. */
const CLIENT_MS = 1000;
/** Connections served at once; more are closed at accept. */
const MAX_CLIENTS = 1024;

/** What the control socket needs from the process. */
export interface ControlDeps {
  stateDir: string;
  sockets: UnixSockets;
  timers: Timers;
  log: Logger;
  /** The user whose connections are served. */
  uid: number;
}

/** What the announcer does with a request. */
export interface RequestHandlers {
  control(request: Request): Reply;
  /**
   * Runs a CNI command of `caller` (its paths resolve as it sees them); `refused` when this announcer does not take it
   * (`handover`: a newer build is to serve).
   */
  cni(command: CniCommand, caller: Caller): { refused: string } | Promise<{ exit: number; stdout: string }>;
}

/** The listening socket and its connected clients. */
export class ControlSocket {
  private readonly listener: Listener;
  private readonly clients = new Set<Connection>();
  /** CNI commands running, with when each is next due a beat (boot ms). */
  private readonly running = new Map<Connection, number>();
  private readonly scratch = Buffer.alloc(64 * 1024);

  /** `failed` counts and logs what went wrong. */
  constructor(
    private readonly deps: ControlDeps,
    private readonly handlers: RequestHandlers,
    private readonly failed: (what: string, error: unknown) => void,
  ) {
    this.listener = new Listener(deps, failed, (fd) => this.closeQuietly(fd));
  }

  /** Whether a client is connected or a command runs. */
  get busy(): boolean {
    return this.clients.size > 0;
  }

  /** Whether the socket is listening. */
  get listening(): boolean {
    return this.listener.listening;
  }

  /**
   * The sockets to poll for input: the listening one (when listening and accepting), then the clients whose request is
   * still coming.
   */
  fds(): number[] {
    return [...this.listener.fds(), ...[...this.clients].filter((c) => this.reading(c)).map((c) => c.fd)];
  }

  /** Whether `client`'s request is still coming (a running or ending client is not read: its EOF would wake poll). */
  private reading(client: Connection): boolean {
    return !this.running.has(client) && !client.closing;
  }

  /** The clients whose replies wait for room in their socket. */
  writeFds(): number[] {
    return [...this.clients].filter((c) => c.wantsWrite).map((c) => c.fd);
  }

  /**
   * When the next client times out (reading its request, or its end), beat falls due or accepting resumes (boot ms);
   * Infinity with none.
   */
  wakeAt(): number {
    const timed = [...this.clients].filter((c) => this.reading(c) || c.closing).map((c) => c.until);
    return Math.min(this.listener.wakeAt(), ...timed, ...this.running.values());
  }

  listen(): void {
    this.listener.listen();
  }

  /** Stops listening (see Listener.unlisten); connected clients are still served. */
  unlisten(): void {
    this.listener.unlisten();
  }

  /**
   * Accepts new clients, reads requests, writes what waits, beats for running commands, drops clients past their time.
   */
  serve(readable: ReadonlySet<number>, writable: ReadonlySet<number>): void {
    this.listener.acceptAll(readable, (peer) => this.admit(peer));
    const now = this.deps.timers.bootMs();
    for (const client of [...this.clients]) {
      if (writable.has(client.fd))
        this.guarded(client, () => client.flush(this.deps.sockets) && client.closing && this.drop(client));
      if (!this.clients.has(client)) continue;
      if (this.running.has(client)) this.beat(client, now);
      else if (this.reading(client) && readable.has(client.fd)) this.guarded(client, () => this.readRequest(client));
      else if ((this.reading(client) || client.closing) && now >= client.until) this.drop(client);
    }
  }

  /** Closes every client and the listening socket. */
  close(): void {
    for (const c of [...this.clients]) this.drop(c);
    this.unlisten();
  }

  private beat(client: Connection, now: number): void {
    if (now < this.running.get(client)!) return;
    this.running.set(client, now + BEAT_MS);
    this.guarded(client, () => client.write(this.deps.sockets, encodeReply({ beat: true })));
  }

  private readRequest(client: Connection): void {
    const got = client.read(this.deps.sockets, this.scratch, MAX_REQUEST_LINE);
    if (got === 'pending') return;
    if (got === 'closed') return this.drop(client);
    if (got === 'too long') {
      this.deps.log.warn('dropped a request line over the limit', { pid: client.peer.pid, limit: MAX_REQUEST_LINE });
      return this.drop(client);
    }
    const request = checkRequestLine(got.line);
    if (typeof request === 'string') return this.end(client, { refused: request });
    // A retired op (a previous release's shim) hears why, as a control reply: that shim logs it and keeps its record.
    if (request.kind === 'retired') return this.end(client, { control: { ok: false, error: request.refusal } });
    // A control request is safe to act on late.
    if (request.kind === 'control') return this.end(client, { control: this.handlers.control(request.request) });
    const command = request.env.CNI_COMMAND;
    const now = this.deps.timers.bootMs();
    const { deadline } = request;
    if (tooLate({ ...request, command }, now)) {
      this.deps.log.warn('dropped a command its sender no longer waits for', { pid: client.peer.pid, command });
      return this.drop(client);
    }
    const connected = (): boolean => this.clients.has(client) && !client.peerGone(this.deps.sockets, this.scratch);
    const stillWanted = wantedWhile(command, deadline, () => this.deps.timers.bootMs(), connected);
    const taken = this.handlers.cni({ ...request, stillWanted }, { pid: client.peer.pid, connected });
    if ('refused' in taken) return this.end(client, taken);
    // Only an older shim hears `ack` and `beat`; a deadline's request waits for the end alone.
    if (deadline === undefined) client.write(this.deps.sockets, encodeReply({ ack: true }));
    this.running.set(client, deadline === undefined ? now + BEAT_MS : Infinity);
    taken.then(
      (done) => this.finish(client, done),
      (err: unknown) => {
        this.failed('CNI command failed outside dispatch', err);
        this.finish(client, undefined);
      },
    );
  }

  private finish(client: Connection, done: { exit: number; stdout: string } | undefined): void {
    this.running.delete(client);
    if (!this.clients.has(client)) return;
    // Dispatch never rejects, so this is a bug's path: the client sees the connection end.
    if (done === undefined) return this.drop(client);
    this.guarded(client, () => this.end(client, done));
  }

  /** Writes the last line; the connection closes once it is out, or CLIENT_MS on if the client reads none of it. */
  private end(client: Connection, reply: WireReply): void {
    client.closing = true;
    client.until = this.deps.timers.bootMs() + CLIENT_MS;
    client.write(this.deps.sockets, encodeReply(reply));
    if (!client.wantsWrite) this.drop(client);
  }

  /** Runs `work` on a client; a throw (EPIPE, ECONNRESET: the client left) drops it. */
  private guarded(client: Connection, work: () => unknown): void {
    try {
      work();
    } catch (err) {
      if (err instanceof SysError && (err.code === 'EPIPE' || err.code === 'ECONNRESET'))
        this.deps.log.debug('client left before its reply');
      else this.failed('control connection failed', err);
      this.drop(client);
    }
  }

  private drop(client: Connection): void {
    if (!this.clients.delete(client)) return;
    this.closeQuietly(client.fd);
  }

  private closeQuietly(fd: number): void {
    try {
      this.deps.sockets.close(fd);
    } catch (err) {
      this.failed('cannot close a control socket', err);
    }
  }

  /** Serves an accepted connection: only from our own user, and at most MAX_CLIENTS at once. */
  private admit(peer: Accepted): void {
    if (peer.uid !== this.deps.uid || this.clients.size >= MAX_CLIENTS) {
      if (peer.uid !== this.deps.uid)
        this.deps.log.warn('refused a control connection from another user', { uid: peer.uid, pid: peer.pid });
      this.closeQuietly(peer.fd);
      return;
    }
    this.clients.add(new Connection(peer.fd, peer, this.deps.timers.bootMs() + CLIENT_MS));
  }
}
