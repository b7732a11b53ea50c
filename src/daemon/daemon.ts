// `announcer daemon <stateDir>`: the node's one announcer for a stateDir. It
// runs the CNI commands the shims forward (src/shim) and sends every
// attachment's later rounds, in one single-threaded loop around poll(2): its
// socket and clients, the event sockets of deferred waits, and the fds and
// deadlines of the commands' own waits (LoopWaits). Its work lives in the
// records of stateDir (written under the attachment's lock), so a killed
// announcer loses nothing: the next one reads them again, skipping rounds
// whose time has passed. One whose executable was replaced hands over, and so
// does one a shim started when the DaemonSet's (`--resident`) asks it to.
import type { Logger } from '../log';
import { join } from '../path';
import { totalFrames } from '../announce/round';
import type { JobHost } from '../announce/job-host';
import type { TryLock } from '../sys/libc';
import { unlinkIfPresent } from '../sys/safe-file';
import { START_MARKER, stateDirOf } from '../shim/wire';
import { BackgroundCloser } from './background-closer';
import type { CniRunner } from './cni-host';
import type { CniCommand } from './admission';
import type { Caller } from './caller-host';
import { ControlSocket, type ControlDeps, type RequestHandlers } from './control';
import { addFrames, countServed, newCounters } from './counters';
import { takeHandover, writeHandover } from './handover';
import { HttpEndpoint, type HttpDeps } from './http-server';
import { Jobs, type JobDeps } from './jobs';
import { LoopWaits } from './loop-waits';
import { LEGACY_BUDGET_FILES } from './paths';
import { MemoryLocks } from './memory-locks';
import type { LockFile } from '../announce/attachment-lock';
import { LazyMetrics } from './lazy-metrics';
import { MetricsFile } from './metrics-file';
import { RESIDENT_REFUSAL, type Reply, type Request } from './protocol';
import type { PluginConfig } from '../cni/config';
import type { NodeSettings } from '../cni/node-settings';
import { NodeOptionNotes } from './node-option-notes';
import { withDaemonLock, type TakeOver, type TakeOverDeps } from './take-over';

/** After a turn that threw, the loop waits this long before the next: a throw that repeats must not spin. */
const PAUSE_AFTER_ERROR_MS = 100;

/** What the announcer needs from the process. */
export interface DaemonDeps
  extends Omit<JobDeps, 'closeInBackground' | 'lockFile'>,
    ControlDeps,
    Pick<TakeOverDeps, 'resident' | 'askHandover' | 'waitForHolder'> {
  /**
   * close(2) on a worker thread (koffi's async queue, 256 calls at most); `done` hears the outcome. The announcer
   * bounds how many are in flight.
   */
  closeInBackground(fd: number, done: (error?: unknown) => void): void;
  tryLock: TryLock;
  /** The announcer's own log (job logs come from jobLog). */
  log: Logger;
  /** The node settings (its flags over the stateDir's announcer.conf), fixed for the announcer's life. */
  settings: NodeSettings;
  /** Writes the metrics file atomically. */
  writeMetrics(file: string, text: string): void;
  /** Why the metrics file can never be written (its directory missing, not a directory…); undefined if it may be. */
  metricsFileProblem(file: string): string | undefined;
  /** Where to serve /metrics and /healthz (--listen), and the calls to. */
  http?: Pick<HttpDeps, 'address' | 'sockets'>;
  /** This executable's build (src/build-id.ts). */
  build: string;
  /** Whether the file this announcer was started from has been replaced (an upgrade). */
  executableReplaced(): boolean;
  /** The runner of CNI commands, hosted on this announcer's loop (src/daemon/cni-host.ts). */
  commands(host: CommandHost): CniRunner;
}

/** What the announcer gives the commands it runs: its loop's waits, its table of work, its closer. */
export interface CommandHost {
  waits: LoopWaits;
  /** The table of work as a command taken at `takenAt` (boot ms) sees it: ADD reports the time to its round 1. */
  jobHost(takenAt: number): JobHost;
  closeInBackground(fd: number): void;
  /** Hears each command's config (and its network's log): node options in a conflist are said once, not applied. */
  noteConfig(config: Pick<PluginConfig, 'name' | 'nodeOptions'>, networkLog: Pick<Logger, 'warn'>): void;
  /** The attachment locks, in memory: the rounds take the same ones. */
  attachmentLock: LockFile;
}

/**
 * Runs the announcer of deps.stateDir until idle for idleExitMs (never when resident), SIGTERM, or a hand-over; returns
 * at once when another one serves (take-over.ts).
 */
export function runDaemon(deps: DaemonDeps): Promise<TakeOver> {
  return withDaemonLock(deps, () => new Daemon(deps).run());
}

class Daemon {
  private readonly counters = newCounters();
  private readonly closer: BackgroundCloser;
  private readonly jobs: Jobs;
  private readonly control: ControlSocket;
  private readonly waits: LoopWaits;
  private readonly runCni: CniRunner;
  private readonly settings: NodeSettings;
  private stopping = false;
  /** Until when (monotonic ms) the loop backs off after a turn that threw. */
  private pausedUntil = -Infinity;
  /**
   * Set once a request from another build found this executable replaced: serve no more, hand over once running
   * commands end.
   */
  private handingOver = false;
  private readonly metrics = new LazyMetrics(() => this.counters);
  private readonly metricsFile: MetricsFile;
  private http: HttpEndpoint | undefined;

  constructor(private readonly deps: DaemonDeps) {
    this.settings = deps.settings;
    const metricsDeps = {
      now: () => deps.timers.now(),
      write: deps.writeMetrics,
      problem: deps.metricsFileProblem,
      count: () => void this.counters.errors++,
      log: deps.log,
    };
    this.metricsFile = new MetricsFile(metricsDeps, this.metrics, this.settings.metricsFile);
    const calls = { closeInBackground: deps.closeInBackground, close: (fd: number) => deps.libc.close(fd) };
    this.closer = new BackgroundCloser(calls, (fd, error) => this.failed('cannot close a socket', error, { fd }));
    const closeInBackground = (fd: number): void => this.closer.close(fd);
    this.waits = new LoopWaits(() => deps.timers.now());
    const attachmentLock = new MemoryLocks((ms) => this.waits.sleep(ms)).take;
    this.jobs = new Jobs({ ...deps, closeInBackground, lockFile: attachmentLock }, this.counters);
    const notes = new NodeOptionNotes(deps.log, this.settings);
    this.runCni = deps.commands({
      waits: this.waits,
      jobHost: (takenAt) => this.jobHost(takenAt),
      closeInBackground,
      noteConfig: (config, networkLog) => notes.note(config, networkLog),
      attachmentLock,
    });
    const handlers: RequestHandlers = {
      control: (r) => this.handleSafely(r),
      cni: (c, caller) => this.takeCommand(c, caller),
    };
    this.control = new ControlSocket(deps, handlers, (what, error) => this.failed(what, error));
  }

  /**
   * Runs until SIGTERM or SIGINT, idle for idleExitMs with no record holding work, or handed over; never throws once
   * listening.
   */
  async run(): Promise<void> {
    const stop = (): void => void (this.stopping = true);
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    try {
      if (this.deps.http) this.http = this.listenHttp(this.deps.http);
      // Listen first: a command that found nobody listening wrote its record before, so recover() sees it.
      this.control.listen();
      for (const file of [START_MARKER, ...LEGACY_BUDGET_FILES])
        this.guard(`cannot remove ${file}`, () => unlinkIfPresent(join(this.deps.stateDir, file)), undefined);
      const handedOver = this.guard('cannot read the hand-over', () => takeHandover(this.deps.stateDir), new Map());
      this.guard('cannot read the records', () => this.jobs.recover(handedOver), undefined);
      this.deps.log.info('announcer started', {
        pid: process.pid,
        build: this.deps.build,
        stateDir: this.deps.stateDir,
        pending: this.jobs.size,
        handedOver: handedOver.size,
        settings: this.settings,
      });
      this.metricsFile.start();
      await this.loop();
    } finally {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      this.guard('cannot close the pod sockets', () => this.jobs.close(), undefined);
      this.guard('cannot close the control socket', () => this.control.close(), undefined);
      this.guard('cannot close the sockets waiting to be closed', () => this.closer.closeWaiting(), undefined);
      this.guard('cannot close the HTTP endpoint', () => this.http?.close(), undefined);
      await this.metricsFile.flush(true);
      this.deps.log.info('announcer stopped', { pid: process.pid, handedOver: this.handingOver });
    }
  }

  private async loop(): Promise<void> {
    let idleSince = this.deps.timers.now();
    while (!this.stopping || this.handsOverOnStop()) {
      if (this.handingOver && !this.control.busy) {
        this.guard(
          'cannot write the hand-over',
          () => writeHandover(this.deps.stateDir, this.jobs.progress()),
          undefined,
        );
        break;
      }
      const busy = this.jobs.size > 0 || this.control.busy;
      if (!busy && !this.deps.resident && this.deps.timers.now() - idleSince >= this.settings.idleExitMs) break;
      try {
        await this.turn(this.deps.timers.bootMs());
      } catch (err) {
        this.failed('announcer turn failed', err);
        this.pausedUntil = this.deps.timers.now() + PAUSE_AFTER_ERROR_MS;
      }
      // Idle time starts when the last work ends, not before the turn's wait (up to CHECK_MS) that ended it.
      if (busy || this.jobs.size > 0 || this.control.busy) idleSince = this.deps.timers.now();
    }
  }

  /**
   * One wait in the loop's one poll(2), for sockets or the next due time, then whatever is due: every wait of the
   * announcer (readiness, probe windows, the budget, a back-off) is an fd or a deadline here, so a turn never blocks
   * elsewhere.
   */
  private async turn(now: number): Promise<void> {
    // While handing over, bursts go on until the commands still running end: then where each stands is written.
    const served = this.http ? [this.control, this.http] : [this.control];
    const pause = this.pausedUntil - this.deps.timers.now();
    if (pause > 0) {
      // Backing off after a turn that threw: a throw that repeats must not spin. Nothing is read meanwhile.
      this.deps.libc.pollInOut([], [], pause);
      return;
    }
    const reading = [...served.flatMap((s) => s.fds()), ...this.jobs.eventFds(), ...this.waits.fds()];
    const dueIn = Math.min(this.jobs.wakeAt(now), ...served.map((s) => s.wakeAt())) - now;
    const { readable, writable } = this.deps.libc.pollInOut(
      reading,
      served.flatMap((s) => s.writeFds()),
      Math.max(0, Math.min(dueIn, this.waits.msLeft())),
    );
    for (const s of served) s.serve(readable, writable);
    this.waits.settle(readable);
    await this.jobs.runDue(this.deps.timers.bootMs(), readable);
    await this.metricsFile.flush(false);
    // Let the commands whose waits settled run on, and completions from other threads (background closes).
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** Whether this announcer takes a CNI command: not another stateDir's, and none once a newer build is to serve. */
  private takeCommand(command: CniCommand, caller: Caller): ReturnType<RequestHandlers['cni']> {
    if (stateDirOf(command.stdin) !== this.deps.stateDir) return { refused: 'another stateDir' };
    if (
      !this.handingOver &&
      command.build !== this.deps.build &&
      this.guard('cannot look at the executable', () => this.deps.executableReplaced(), false)
    ) {
      this.handOver('executable replaced: handing over to the new build', {
        build: this.deps.build,
        newBuild: command.build,
      });
    }
    if (this.handingOver) return { refused: 'handover' };
    countServed(this.counters, command.env.CNI_COMMAND);
    return this.runCni(command.env, command.stdin, command.stillWanted, caller);
  }

  /**
   * Whether the loop goes on once stopping: a resident announcer (its pod stops) hands over to whichever announcer
   * comes next (a shim starts one).
   */
  private handsOverOnStop(): boolean {
    if (!this.deps.resident) return false;
    this.handOver('SIGTERM: handing over to the next announcer', {});
    return true;
  }

  /** Serves no more: stops listening, and once the running commands end writes where each burst stands and returns. */
  private handOver(why: string, fields: Record<string, unknown>): void {
    if (this.handingOver) return;
    this.handingOver = true;
    this.control.unlisten();
    this.deps.log.info(why, fields);
  }

  /** Runs `work`; a throw is counted and logged as `what`, and gives `otherwise`. */
  private guard<T>(what: string, work: () => T, otherwise: T): T {
    try {
      return work();
    } catch (err) {
      this.failed(what, err);
      return otherwise;
    }
  }

  private failed(what: string, error: unknown, fields: Record<string, unknown> = {}): void {
    this.counters.errors++;
    this.deps.log.error(what, { ...fields, error });
  }

  private handleSafely(request: Request): Reply {
    try {
      return this.handle(request);
    } catch (err) {
      this.failed('control request failed', err, { op: request.op });
      return { ok: false, error: 'internal error' };
    }
  }

  private handle(request: Request): Reply {
    if (request.op === 'handover') {
      if (this.deps.resident) return { ok: false, error: RESIDENT_REFUSAL };
      this.handOver('a resident announcer starts: handing over to it', {});
      return { ok: true };
    }
    return {
      ok: true,
      status: {
        pid: process.pid,
        attachments: this.jobs.status(this.deps.timers.bootMs()),
        counters: structuredClone(this.counters),
      },
    };
  }

  /** The table of work, as a command taken at `takenAt` (boot ms) hands its job over or cancels one. */
  private jobHost(takenAt: number): JobHost {
    return {
      added: (record, job, { sent, conflicts }) => {
        if (totalFrames(sent) > 0) {
          addFrames(this.counters, sent);
          this.counters.rounds.sent++;
          this.metrics.observeAddToFirstRound((this.deps.timers.bootMs() - takenAt) / 1000);
        }
        this.counters.conflicts += conflicts ?? 0;
        // A job the table cannot take stays in its record, for the next announcer's recovery.
        if (job) this.guard('cannot take a job', () => this.jobs.take(record, job), undefined);
        else this.jobs.forget(record, 'no job');
      },
      cancel: (record) => this.jobs.forget(record, 'cancelled'),
    };
  }

  /** The HTTP endpoint of --listen; one that cannot listen ends the announcer (HttpListenError). */
  private listenHttp(http: NonNullable<DaemonDeps['http']>): HttpEndpoint {
    const healthy = (): boolean => this.control.listening && !this.handingOver && !this.stopping;
    const deps: HttpDeps = {
      ...http,
      bootMs: () => this.deps.timers.bootMs(),
      log: this.deps.log,
      failed: (what, error) => this.failed(what, error),
    };
    return HttpEndpoint.listen(deps, { healthy, metrics: this.metrics });
  }
}
