// `announcer daemon <stateDir>`: the node's one announcer for a stateDir. It runs the CNI commands the shims forward
// (src/shim) and sends every attachment's later rounds, in one single-threaded loop around poll(2): its socket and
// clients, the event sockets of deferred waits, and the fds and deadlines of the commands' own waits (LoopWaits). Every
// wait of the announcer is an fd or a deadline in that one poll, so a turn never blocks elsewhere, and an idle
// announcer sleeps until something is due. Its work is journaled in the records of stateDir (written under the
// attachment's lock), so a killed announcer loses nothing: the next one reads them at its start, skipping rounds whose
// time has passed.
//
// Every stop is one sequence, bounded by STOP_MS: idle for idleExitMs, SIGTERM or SIGINT, a hand-over (its executable
// replaced and a request of the new build come; a resident announcer asks). The socket is cut off and every request
// answered or passed on (server.ts), the bursts go on meanwhile, and where each stands is written to
// `announcer-handover` for the next announcer.
import type { BackgroundJob } from '../announce/background-job';
import type { SocketOpener } from '../announce/session';
import { NodeFrameBudget, type NodeBudget } from '../announce/budget';
import { RecordMemory } from '../announce/record-memory';
import type { NodeSettings } from '../cni/node-settings';
import type { Logger } from '../log';
import { join } from '../path';
import { RESIDENT_REFUSAL, type ControlReply, type ControlRequest } from '../protocol';
import type { CallerViews } from '../sys/caller-view';
import type { Libc } from '../sys/libc';
import { unlinkIfPresent } from '../sys/safe-file';
import type { TcpAddress, TcpSockets } from '../sys/tcp-socket';
import type { UnixSockets } from '../sys/unix-socket';
import { recordName, START_MARKER } from '../state-files';
import type { CniCommand } from './admission';
import { BackgroundCloser, MemoryLocks, type Caller, type CniRunner } from './host';
import { countServed, LazyMetrics, MetricsFile, newCounters, type Counters } from './metrics';
import { HttpEndpoint } from './http';
import { withDaemonLock, type TakeOver, type LockDeps } from './lock';
import { Server, type RequestHandlers } from './server';
import { Jobs, takeHandover, writeHandover } from './table';

/** After a turn that threw, the loop waits this long before the next: a throw that repeats must not spin. */
const PAUSE_AFTER_ERROR_MS = 100;
/**
 * The loop stamps its progress on its lock file at most this often, and only while it turns. While a call waits for
 * its answer, the loop turns at least this often, so that its stamp stays fresh; an idle announcer sleeps in poll(2)
 * and stamps nothing. That tells idle from hung (src/shim/replace-hung.ts): its socket is in the poll, so a call's
 * connection wakes it and the turn that takes the request stamps; only an announcer that took a request and then made
 * no progress has a stamp as old as the call's wait.
 */
export const STAMP_MS = 1000;

/** What the announcer needs from the process; its parts (Announcer) carry it on as it is. */
export interface DaemonDeps extends LockDeps {
  /** The node settings (the stateDir's announcer.conf), fixed for the announcer's life. */
  settings: NodeSettings;
  libc: Libc & UnixSockets & TcpSockets;
  open: SocketOpener;
  views: CallerViews;
  /** The announcer's own log (LockDeps); `jobLog`, a job's (its network's logFile). */
  jobLog(job: BackgroundJob): Logger;
  /** This executable's build (src/about.ts). */
  build: string;
  /** Run by the DaemonSet: never exits for being idle, and takes over from an announcer a shim started. */
  resident: boolean;
  /** The user whose connections are served. */
  uid: number;
  /** Where to serve /metrics and /healthz (--listen). */
  listen?: TcpAddress | undefined;
  /** Writes the metrics file atomically; why it can never be written (undefined: it may be). */
  writeMetrics(file: string, text: string): void;
  metricsFileProblem(file: string): string | undefined;
  /** Stamps progress on the lock file open on `lockFd` (its mtime, to now): src/shim/replace-hung.ts reads it. */
  stampProgress(lockFd: number): void;
  /** Whether the file this announcer was started from has been replaced (an upgrade). */
  executableReplaced(): boolean;
  /** The runner of CNI commands on `announcer`'s parts (src/daemon/host.ts). */
  commands(announcer: Announcer): CniRunner;
  /** Says once that the announcer listens, to whoever started it (--ready-fd). */
  ready?(): void;
  /** Its threads in another netns than the main thread's (src/sys/netns.ts): one born in a pod's keeps it alive. */
  threadsInOtherNetns(): { tid: number; comm: string }[];
}

/** The announcer's parts, made once at its start: what its table, rounds and hosted commands run on. */
export interface Announcer extends DaemonDeps {
  waits: LoopWaits;
  attachmentLocks: MemoryLocks;
  written: RecordMemory;
  frameBudget: NodeBudget;
  closeInBackground(fd: number): void;
  counters: Counters;
  metrics: LazyMetrics;
  jobs: Jobs;
  /** Counts a failure in `errors` and logs it. */
  failed(what: string, error: unknown, fields?: Record<string, unknown>): void;
}

/**
 * Runs the announcer of deps.stateDir until it stops (see the top of this file); returns at once when another one
 * serves (lock.ts).
 */
export function runDaemon(deps: DaemonDeps): Promise<TakeOver> {
  return withDaemonLock(deps, (lockFd) => new Daemon(deps, lockFd).run());
}

class Daemon {
  private readonly a: Announcer;
  private readonly server: Server;
  private readonly closer: BackgroundCloser;
  private readonly runCni: CniRunner;
  private readonly metricsFile: MetricsFile;
  private http: HttpEndpoint | undefined;
  /** When the stop began (monotonic ms); undefined while serving. */
  private stoppingSince: number | undefined;
  /** A signal's stop, asked by its handler and begun by the loop. */
  private signalled: NodeJS.Signals | undefined;
  /** Bursts written to `announcer-handover` at the end of the stop. */
  private handedOver = 0;
  /** Until when (monotonic ms) the loop backs off after a turn that threw. */
  private pausedUntil = -Infinity;
  private stampedAt = -Infinity;
  /** Entries into a pod's netns so far; `checkedAt`, how many there were at the last look for stray threads. */
  private entries = 0;
  private checkedAt = 0;

  constructor(
    deps: DaemonDeps,
    private readonly lockFd: number,
  ) {
    const counters = newCounters();
    const failed = (what: string, error: unknown, fields: Record<string, unknown> = {}): void => {
      counters.errors++;
      deps.log.error(what, { ...fields, error });
    };
    this.closer = new BackgroundCloser(deps.libc, (fd, error) => failed('cannot close a socket', error, { fd }));
    const waits = new LoopWaits(() => deps.timers.now());
    // Every entry into a pod's netns is counted: a turn that entered one looks for a thread born there.
    const entering = <T>(enter: () => T): T => (this.entries++, enter());
    const open: SocketOpener = {
      pod: (netns) => entering(() => deps.open.pod(netns)),
      host: (netns, groups) =>
        netns === undefined ? deps.open.host(netns, groups) : entering(() => deps.open.host(netns, groups)),
      receivers: (netns, ifindexes, ethertype) => entering(() => deps.open.receivers(netns, ifindexes, ethertype)),
    };
    this.a = {
      ...deps,
      open,
      waits,
      counters,
      failed,
      attachmentLocks: new MemoryLocks((ms, signal) => waits.sleep(ms, signal)),
      written: new RecordMemory(),
      frameBudget: new NodeFrameBudget(() => deps.settings.rateLimit),
      closeInBackground: (fd) => this.closer.close(fd),
      metrics: new LazyMetrics(() => counters),
      jobs: undefined as unknown as Jobs,
    };
    this.a.jobs = new Jobs(this.a);
    this.metricsFile = new MetricsFile(this.a);
    this.runCni = deps.commands(this.a);
    this.server = new Server(this.a, {
      control: (r) => this.answer(r),
      cni: (c, caller) => this.takeCommand(c, caller),
      served: (command) => countServed(counters, command),
    });
  }

  /**
   * Runs until it stops (see the top of this file): SIGTERM or SIGINT, idle for idleExitMs (no work in its table, no
   * client connected), or a hand-over; never throws once listening.
   */
  async run(): Promise<void> {
    const onSignal = (signal: NodeJS.Signals) => (): void => void (this.signalled ??= signal);
    const [term, int] = [onSignal('SIGTERM'), onSignal('SIGINT')];
    process.on('SIGTERM', term);
    process.on('SIGINT', int);
    try {
      // One that cannot listen ends the announcer (HttpListenError).
      const healthy = (): boolean => this.server.listening && !this.stopping;
      if (this.a.listen) this.http = HttpEndpoint.listen(this.a, this.a.listen, { healthy, metrics: this.a.metrics });
      // Listen first: a caller waits no longer than it must; no command runs before the records are read.
      this.server.listen();
      this.a.ready?.();
      this.recover();
      this.metricsFile.start();
      await this.loop();
    } finally {
      process.off('SIGTERM', term);
      process.off('SIGINT', int);
      this.guard('cannot close the pod sockets', () => this.a.jobs.close());
      this.guard('cannot close the control socket', () => this.server.close());
      this.guard('cannot close the sockets waiting to be closed', () => this.closer.closeWaiting());
      this.guard('cannot close the HTTP endpoint', () => this.http?.close());
      await this.metricsFile.flush(true);
      this.a.log.info('announcer stopped', { pid: process.pid, ...this.stopTook() });
    }
  }

  /** How long the stop took, how many requests it passed on and how many bursts it handed over: the last log line. */
  private stopTook(): { stopMs?: number; passedOn?: number; handedOver?: number } {
    if (this.stoppingSince === undefined) return {};
    const stopMs = Math.round(this.a.timers.now() - this.stoppingSince);
    return { stopMs, passedOn: this.server.passedOn(), handedOver: this.handedOver };
  }

  /** Removes the start marker, then takes up the hand-over and the records (the journal). */
  private recover(): void {
    const { stateDir, build } = this.a;
    this.guard(`cannot remove ${START_MARKER}`, () => unlinkIfPresent(join(stateDir, START_MARKER)));
    const handedOver = this.guard('cannot read the hand-over', () => takeHandover(stateDir)) ?? new Map();
    this.guard('cannot read the records', () => this.a.jobs.recover(handedOver));
    const started = { pid: process.pid, build, stateDir, pending: this.a.jobs.size, handedOver: handedOver.size };
    this.a.log.info('announcer started', { ...started, settings: this.a.settings });
  }

  private async loop(): Promise<void> {
    let idleSince = this.a.timers.now();
    for (;;) {
      if (!this.stopping) this.stopIfDue(idleSince);
      if (this.server.done()) break;
      this.stampProgress();
      const busy = this.a.jobs.size > 0 || this.server.busy;
      const accepted = this.server.accepted;
      try {
        // Only an announcer that may exit for being idle wakes for it: none stopping, resident, or with work.
        const neverIdle = this.stopping || this.a.resident || busy;
        await this.turn(neverIdle ? Infinity : idleSince + this.a.settings.idleExitMs);
      } catch (err) {
        this.a.failed('announcer turn failed', err);
        this.pausedUntil = this.a.timers.now() + PAUSE_AFTER_ERROR_MS;
      }
      this.lookForStrayThreads();
      // Idle time starts when the last work ends, not before the turn's wait that ended it.
      const active = busy || this.a.jobs.size > 0 || this.server.busy || this.server.accepted !== accepted;
      if (active) idleSince = this.a.timers.now();
    }
    const progress = this.a.jobs.progress();
    this.handedOver = progress.size;
    if (progress.size > 0) this.guard('cannot write the hand-over', () => writeHandover(this.a.stateDir, progress));
  }

  /**
   * One turn: one wait in the one poll(2), for sockets or the next due time (`idleAt`, monotonic ms, the idle exit's
   * when it may come, among them), then whatever is due. Until pausedUntil (after a turn that threw) it only waits,
   * reading nothing.
   */
  private async turn(idleAt: number): Promise<void> {
    const { libc, timers, waits, jobs } = this.a;
    const pause = this.pausedUntil - timers.now();
    if (pause > 0) {
      libc.pollInOut([], [], pause);
      return;
    }
    const served = this.http ? [this.server, this.http] : [this.server];
    const bootNow = timers.bootMs();
    const due = Math.min(jobs.wakeAt(bootNow), ...served.map((s) => s.wakeAt())) - bootNow;
    const stampDue = this.server.busy ? this.stampedAt + STAMP_MS - timers.now() : Infinity;
    const idle = Math.min(idleAt, this.metricsFile.wakeAt()) - timers.now();
    const reading = [...served.flatMap((s) => s.fds()), ...jobs.eventFds(), ...waits.fds()];
    const writing = served.flatMap((s) => s.writeFds());
    const timeoutMs = Math.max(0, Math.min(due, idle, stampDue, waits.msLeft()));
    const { readable, writable } = libc.pollInOut(reading, writing, timeoutMs);
    // A signal that came during the poll is heard here, before the requests the poll found are taken.
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.signalled) this.stop(`${this.signalled}: handing over to the next announcer`);
    for (const s of served) s.serve(readable, writable);
    waits.settle(readable);
    await jobs.runDue(timers.bootMs(), readable);
    await this.metricsFile.flush(false);
    // Let the commands whose waits settled run on, and completions from other threads (background closes).
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** Stamps progress on the lock file, at most every STAMP_MS: a loop that turns is not hung. */
  private stampProgress(): void {
    const now = this.a.timers.now();
    if (now - this.stampedAt < STAMP_MS) return;
    this.stampedAt = now;
    this.guard('cannot stamp progress', () => this.a.stampProgress(this.lockFd));
  }

  /**
   * After a turn that entered a pod's netns: a thread born there keeps that netns alive for as long as it lives, so
   * this announcer hands over to a fresh one (whose threads are all in the host's netns).
   */
  private lookForStrayThreads(): void {
    if (this.entries === this.checkedAt || this.stopping) return;
    this.checkedAt = this.entries;
    const threads = this.guard('cannot look at the threads', () => this.a.threadsInOtherNetns()) ?? [];
    if (threads.length === 0) return;
    this.a.failed('a thread born inside a pod netns keeps it alive: handing over to a fresh announcer', undefined, {
      threads: threads.map((t) => `${t.tid} (${t.comm})`),
    });
    this.stop('handing over: a thread of this announcer is in a pod netns');
  }

  /**
   * Stops on a signal (the next announcer goes on with the bursts), or once idle (no work, no client) for idleExitMs
   * since `idleSince` (never when resident).
   */
  private stopIfDue(idleSince: number): void {
    if (this.signalled) return this.stop(`${this.signalled}: handing over to the next announcer`);
    const { idleExitMs } = this.a.settings;
    if (this.a.resident || this.a.jobs.size > 0 || this.server.busy) return;
    if (this.a.timers.now() - idleSince >= idleExitMs) this.stop('idle: stopping', { idleExitMs });
  }

  /** Begins the stop, logging `why` once: no new caller reaches this announcer, and each waiting one is answered. */
  private stop(why: string, fields: Record<string, unknown> = {}): void {
    if (this.stopping) return;
    this.stoppingSince = this.a.timers.now();
    this.a.log.info(why, fields);
    this.server.stop();
  }

  /** Whether the stop has begun: it takes no new command. */
  private get stopping(): boolean {
    return this.stoppingSince !== undefined;
  }

  /**
   * Whether this announcer takes a CNI command: none of another build once its own executable has been replaced (an
   * upgrade: it stops, and the new build serves). The command's attachment's rounds wait while it runs.
   */
  private takeCommand(command: CniCommand, caller: Caller): ReturnType<RequestHandlers['cni']> {
    const replaced =
      command.build !== this.a.build && this.guard('cannot look at the executable', () => this.a.executableReplaced());
    if (replaced) {
      const fields = { build: this.a.build, newBuild: command.build };
      this.stop('executable replaced: handing over to the new build', fields);
      return { refused: 'handover' };
    }
    const { CNI_CONTAINERID: id, CNI_IFNAME: ifname } = command.env;
    const release = id && ifname ? this.a.jobs.hold(recordName(id, ifname)) : undefined;
    const ran = this.runCni(command.env, command.stdin, command.gate, caller);
    if (release) void ran.finally(release);
    return ran;
  }

  /** The answer to a control request: the status, or (a starting resident announcer asks) a hand-over. */
  private answer(request: ControlRequest): ControlReply {
    if (request.op === 'handover') {
      if (this.a.resident) return { ok: false, error: RESIDENT_REFUSAL };
      this.stop('a resident announcer starts: handing over to it');
      return { ok: true };
    }
    const attachments = this.a.jobs.status(this.a.timers.bootMs());
    return { ok: true, status: { pid: process.pid, attachments, counters: structuredClone(this.a.counters) } };
  }

  /** Runs `work`; a throw is counted and logged as `what`, and gives undefined. */
  private guard<T>(what: string, work: () => T): T | undefined {
    try {
      return work();
    } catch (err) {
      this.a.failed(what, err);
      return undefined;
    }
  }
}

interface PendingWait {
  fds: readonly number[];
  /** Monotonic ms. */
  until: number;
  resolve(): void;
}

/**
 * The waits of the CNI commands the announcer runs, resolved by its one poll(2) loop: each pending wait adds its fds
 * and deadline to the loop's poll, and the loop settles it once an fd is readable or its time is up. So a command that
 * waits (a pod not ready, a probe window, the rate limit, a lock) holds up no other command and no round.
 */
export class LoopWaits {
  private readonly pending = new Set<PendingWait>();

  /** `now`: the monotonic clock the deadlines are on. */
  constructor(private readonly now: () => number) {}

  /**
   * Resolves once one of `fds` is readable or `ms` has passed (at the loop's next turn after); rejects with `signal`'s
   * reason once it aborts (its command is stopped).
   */
  readable(fds: readonly number[], ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const wait: PendingWait = { fds: [...fds], until: this.now() + Math.max(0, ms), resolve };
      this.pending.add(wait);
      if (!signal) return;
      const aborted = (): void => {
        if (this.pending.delete(wait)) reject(signal.reason);
      };
      signal.addEventListener('abort', aborted, { once: true });
      wait.resolve = () => {
        signal.removeEventListener('abort', aborted);
        resolve();
      };
    });
  }

  /** Resolves after `ms`; rejects as readable does. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.readable([], ms, signal);
  }

  /** Every fd a pending wait waits on. */
  fds(): number[] {
    return [...new Set([...this.pending].flatMap((w) => w.fds))];
  }

  /** Ms until the first deadline (Infinity with none). */
  msLeft(): number {
    let first = Infinity;
    for (const w of this.pending) first = Math.min(first, w.until);
    return Math.max(0, first - this.now());
  }

  /** Settles the waits with a readable fd or past their deadline. */
  settle(readable: ReadonlySet<number>): void {
    const now = this.now();
    for (const w of [...this.pending]) {
      if (w.until > now && !w.fds.some((fd) => readable.has(fd))) continue;
      this.pending.delete(w);
      w.resolve();
    }
  }
}
