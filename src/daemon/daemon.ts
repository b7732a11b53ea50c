// `announcer daemon <stateDir>`: the node's one announcer for a stateDir. It runs the CNI commands the shims forward
// (src/shim) and sends every attachment's later rounds, in one single-threaded loop around poll(2): its socket and
// clients, the event sockets of deferred waits, and the fds and deadlines of the commands' own waits (LoopWaits). Its
// work is journaled in the records of stateDir (written under the attachment's lock), so a killed announcer loses
// nothing: the next one reads them at its start, skipping rounds whose time has passed.
//
// Every stop is one sequence, bounded by STOP_MS: idle for idleExitMs, SIGTERM or SIGINT, a hand-over (its executable
// replaced and a request of the new build come; a resident announcer asks). The socket is cut off and every request
// answered or passed on (control.ts), the bursts go on meanwhile, and where each stands is written to
// `announcer-handover` for the next announcer.
import type { JobHost } from '../announce/job-host';
import { RecordMemory } from '../announce/record-memory';
import { join } from '../path';
import { stateDirOf } from '../shim/wire';
import { unlinkIfPresent } from '../sys/safe-file';
import { LEGACY_BUDGET_FILES, recordName, START_MARKER } from '../state-files';
import type { CniCommand } from './admission';
import { BackgroundCloser } from './background-closer';
import type { Caller } from './caller-host';
import type { CniRunner } from './cni-host';
import { ControlSocket, type RequestHandlers } from './control';
import { countServed, newCounters } from './counters';
import type { DaemonDeps } from './daemon-deps';
import { takeHandover, writeHandover } from './handover';
import { HttpEndpoint, type HttpDeps } from './http-server';
import { Jobs } from './jobs';
import { LazyMetrics } from './lazy-metrics';
import { LoopWaits } from './loop-waits';
import { turn } from './loop-turn';
import { MemoryLocks } from './memory-locks';
import { MetricsFile } from './metrics-file';
import { NodeOptionNotes } from './node-option-notes';
import type { Reply, Request } from './protocol';
import { answerControl } from './control-requests';
import type { NodeSettings } from '../cni/node-settings';
import { stamper } from './stamper';
import { tableHost } from './table-host';
import { withDaemonLock, type TakeOver } from './take-over';

/** After a turn that threw, the loop waits this long before the next: a throw that repeats must not spin. */
const PAUSE_AFTER_ERROR_MS = 100;

/**
 * Runs the announcer of deps.stateDir until idle for idleExitMs (never when resident), SIGTERM, or a hand-over; returns
 * at once when another one serves (take-over.ts).
 */
export function runDaemon(deps: DaemonDeps): Promise<TakeOver> {
  return withDaemonLock(deps, (lockFd) => new Daemon(deps, lockFd).run());
}

class Daemon {
  private readonly counters = newCounters();
  private readonly closer: BackgroundCloser;
  private readonly jobs: Jobs;
  private readonly control: ControlSocket;
  private readonly waits: LoopWaits;
  private readonly runCni: CniRunner;
  private readonly settings: NodeSettings;
  /** When the stop began (monotonic ms); undefined while serving. */
  private stoppingSince: number | undefined;
  /** A signal's stop, asked by its handler and begun by the loop. */
  private signalled: NodeJS.Signals | undefined;
  /** Bursts written to `announcer-handover` at the end of the stop. */
  private handedOver = 0;
  /** Until when (monotonic ms) the loop backs off after a turn that threw. */
  private pausedUntil = -Infinity;
  /** Stamps the loop's progress on its lock file (stamper.ts). */
  private readonly stamp: () => void;
  private readonly metrics = new LazyMetrics(() => this.counters);
  private readonly metricsFile: MetricsFile;
  private http: HttpEndpoint | undefined;

  private readonly deps: DaemonDeps;
  /** Entries into a pod's netns so far; `checkedAt`, how many there were at the last look for stray threads. */
  private entries = 0;
  private checkedAt = 0;

  constructor(deps: DaemonDeps, lockFd: number) {
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
    // Every entry into a pod's netns is counted: a turn that entered one looks for a thread born there (turnEnded).
    const open = deps.open;
    const entering = <T>(enter: () => T): T => (this.entries++, enter());
    deps = {
      ...deps,
      open: {
        pod: (netns) => entering(() => open.pod(netns)),
        host: (netns, groups) =>
          netns === undefined ? open.host(netns, groups) : entering(() => open.host(netns, groups)),
        receivers: (netns, ifindexes, ethertype) => entering(() => open.receivers(netns, ifindexes, ethertype)),
      },
    };
    this.deps = deps;
    const attachmentLock = new MemoryLocks((ms) => this.waits.sleep(ms)).take;
    const written = new RecordMemory();
    const gateway = { observeGatewayAnswer: (seconds: number) => this.metrics.observeGatewayAnswer(seconds) };
    this.jobs = new Jobs({ ...deps, ...gateway, closeInBackground, lockFile: attachmentLock, written }, this.counters);
    const notes = new NodeOptionNotes(deps.log, this.settings);
    this.runCni = deps.commands({
      waits: this.waits,
      jobHost: (takenAt) => this.jobHost(takenAt),
      closeInBackground,
      noteConfig: (config, networkLog) => notes.note(config, networkLog),
      attachmentLock,
      written,
    });
    const handlers: RequestHandlers = {
      control: (r) => this.answer(r),
      cni: (c, caller) => this.takeCommand(c, caller),
      served: (command) => countServed(this.counters, command),
    };
    this.control = new ControlSocket(deps, handlers, (what, error) => this.failed(what, error));
    const stampProgress = (): void => this.guard('cannot stamp progress', () => deps.stampProgress(lockFd), undefined);
    this.stamp = stamper(() => deps.timers.now(), stampProgress);
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
      if (this.deps.http) this.http = this.listenHttp(this.deps.http);
      // Listen first: a caller waits no longer than it must; no command runs before the records are read.
      this.control.listen();
      this.deps.ready?.();
      this.recover();
      this.metricsFile.start();
      await this.loop();
    } finally {
      process.off('SIGTERM', term);
      process.off('SIGINT', int);
      this.guard('cannot close the pod sockets', () => this.jobs.close(), undefined);
      this.guard('cannot close the control socket', () => this.control.close(), undefined);
      this.guard('cannot close the sockets waiting to be closed', () => this.closer.closeWaiting(), undefined);
      this.guard('cannot close the HTTP endpoint', () => this.http?.close(), undefined);
      await this.metricsFile.flush(true);
      this.deps.log.info('announcer stopped', { pid: process.pid, ...this.stopTook() });
    }
  }

  /** How long the stop took, how many requests it passed on and how many bursts it handed over: the last log line. */
  private stopTook(): { stopMs?: number; passedOn?: number; handedOver?: number } {
    if (this.stoppingSince === undefined) return {};
    const stopMs = Math.round(this.deps.timers.now() - this.stoppingSince);
    return { stopMs, passedOn: this.control.passedOn(), handedOver: this.handedOver };
  }

  /** Removes the start marker and older versions' files, then takes up the hand-over and the records (the journal). */
  private recover(): void {
    const { stateDir } = this.deps;
    for (const file of [START_MARKER, ...LEGACY_BUDGET_FILES])
      this.guard(`cannot remove ${file}`, () => unlinkIfPresent(join(stateDir, file)), undefined);
    const handedOver = this.guard('cannot read the hand-over', () => takeHandover(stateDir), new Map());
    this.guard('cannot read the records', () => this.jobs.recover(handedOver), undefined);
    const { build } = this.deps;
    const started = { pid: process.pid, build, stateDir, pending: this.jobs.size, handedOver: handedOver.size };
    this.deps.log.info('announcer started', { ...started, settings: this.settings });
  }

  private async loop(): Promise<void> {
    let idleSince = this.deps.timers.now();
    for (;;) {
      if (!this.stopping) this.stopIfDue(idleSince);
      if (this.control.done()) break;
      this.stamp();
      const busy = this.jobs.size > 0 || this.control.busy;
      const accepted = this.control.accepted;
      try {
        await turn(this.turnParts(), this.deps.timers.bootMs(), this.pausedUntil);
      } catch (err) {
        this.failed('announcer turn failed', err);
        this.pausedUntil = this.deps.timers.now() + PAUSE_AFTER_ERROR_MS;
      }
      this.lookForStrayThreads();
      // Idle time starts when the last work ends, not before the turn's wait (up to CHECK_MS) that ended it.
      const active = busy || this.jobs.size > 0 || this.control.busy || this.control.accepted !== accepted;
      if (active) idleSince = this.deps.timers.now();
    }
    const progress = this.jobs.progress();
    this.handedOver = progress.size;
    if (progress.size > 0)
      this.guard('cannot write the hand-over', () => writeHandover(this.deps.stateDir, progress), undefined);
  }

  /**
   * After a turn that entered a pod's netns: a thread born there keeps that netns alive for as long as it lives, so
   * this announcer hands over to a fresh one (whose threads are all in the host's netns).
   */
  private lookForStrayThreads(): void {
    if (this.entries === this.checkedAt || this.stopping) return;
    this.checkedAt = this.entries;
    const threads = this.guard('cannot look at the threads', () => this.deps.threadsInOtherNetns(), []);
    if (threads.length === 0) return;
    this.failed('a thread born inside a pod netns keeps it alive: handing over to a fresh announcer', undefined, {
      threads: threads.map((t) => `${t.tid} (${t.comm})`),
    });
    this.stop('handing over: a thread of this announcer is in a pod netns');
  }

  /** Stops on a signal, or once idle (no work, no client) for idleExitMs since `idleSince` (never when resident). */
  private stopIfDue(idleSince: number): void {
    if (this.signalled) return this.stopOnSignal(this.signalled);
    const { idleExitMs } = this.settings;
    if (this.deps.resident || this.jobs.size > 0 || this.control.busy) return;
    if (this.deps.timers.now() - idleSince >= idleExitMs) this.stop('idle: stopping', { idleExitMs });
  }

  /** The stop a signal asked for: the next announcer goes on with the bursts. */
  private stopOnSignal(signal: NodeJS.Signals): void {
    this.stop(`${signal}: handing over to the next announcer`);
  }

  /** Begins the stop, logging `why` once: no new caller reaches this announcer, and each waiting one is answered. */
  private stop(why: string, fields: Record<string, unknown> = {}): void {
    if (this.stopping) return;
    this.stoppingSince = this.deps.timers.now();
    this.deps.log.info(why, fields);
    this.control.stop();
  }

  /** Whether the stop has begun: it takes no new command. */
  private get stopping(): boolean {
    return this.stoppingSince !== undefined;
  }

  /** Whether the file this announcer was started from has been replaced (an upgrade); a throw counts as not. */
  private executableReplaced(): boolean {
    return this.guard('cannot look at the executable', () => this.deps.executableReplaced(), false);
  }

  /**
   * Whether this announcer takes a CNI command: not another stateDir's, and none of another build once its own
   * executable has been replaced (an upgrade: it stops, and the new build serves).
   */
  private takeCommand(command: CniCommand, caller: Caller): ReturnType<RequestHandlers['cni']> {
    if (stateDirOf(command.stdin) !== this.deps.stateDir) return { refused: 'another stateDir' };
    if (command.build !== this.deps.build && this.executableReplaced()) {
      const fields = { build: this.deps.build, newBuild: command.build };
      this.stop('executable replaced: handing over to the new build', fields);
      return { refused: 'handover' };
    }
    const { CNI_CONTAINERID: id, CNI_IFNAME: ifname } = command.env;
    const release = id && ifname ? this.jobs.hold(recordName(id, ifname)) : undefined;
    const ran = this.runCni(command.env, command.stdin, command.gate, caller);
    if (release) void ran.finally(release);
    return ran;
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

  /** The answer to a control request. */
  private answer(request: Request): Reply {
    return answerControl(
      {
        resident: this.deps.resident === true,
        status: () => ({
          pid: process.pid,
          attachments: this.jobs.status(this.deps.timers.bootMs()),
          counters: structuredClone(this.counters),
        }),
        handOver: (why) => this.stop(why),
        failed: (what, error, fields) => this.failed(what, error, fields),
      },
      request,
    );
  }

  /** The table of work, as a command taken at `takenAt` (boot ms) hands its job over or cancels one. */
  private jobHost(takenAt: number): JobHost {
    const bootMs = (): number => this.deps.timers.bootMs();
    const guard = (what: string, work: () => void): void => this.guard(what, work, undefined);
    return tableHost({ jobs: this.jobs, counters: this.counters, metrics: this.metrics, bootMs, guard }, takenAt);
  }

  /** What a turn of the loop works on; while handing over, bursts go on until the commands still running end. */
  private turnParts(): Parameters<typeof turn>[0] {
    const { libc, timers } = this.deps;
    return {
      libc,
      now: () => timers.now(),
      bootMs: () => timers.bootMs(),
      served: this.http ? [this.control, this.http] : [this.control],
      jobs: this.jobs,
      waits: this.waits,
      metricsFile: this.metricsFile,
      afterPoll: () => {
        if (!this.stopping && this.signalled) this.stopOnSignal(this.signalled);
      },
    };
  }

  /** The HTTP endpoint of --listen; one that cannot listen ends the announcer (HttpListenError). */
  private listenHttp(http: NonNullable<DaemonDeps['http']>): HttpEndpoint {
    const healthy = (): boolean => this.control.listening && !this.stopping;
    const deps: HttpDeps = {
      ...http,
      bootMs: () => this.deps.timers.bootMs(),
      log: this.deps.log,
      failed: (what, error) => this.failed(what, error),
    };
    return HttpEndpoint.listen(deps, { healthy, metrics: this.metrics });
  }
}
