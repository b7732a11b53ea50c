// `announcer daemon <stateDir>`: the node's one announcer for a stateDir. It
// runs the CNI commands the shims forward (src/shim) and sends every
// attachment's later rounds, in one single-threaded loop around poll(2): its
// socket and clients, the event sockets of deferred waits, and the fds and
// deadlines of the commands' own waits (LoopWaits). Its work lives in the
// records of stateDir (written under the attachment's lock), so a killed
// announcer loses nothing: the next one reads them again, skipping rounds
// whose time has passed. One whose executable was replaced hands over.
import { closeSync } from 'node:fs';
import type { Logger } from '../log';
import { join } from '../path';
import { totalFrames } from '../announce/round';
import type { TryLock } from '../sys/libc';
import { unlinkIfPresent } from '../sys/safe-file';
import { START_MARKER, stateDirOf } from '../shim/wire';
import { BackgroundCloser } from './background-closer';
import type { CniRunner } from './cni-host';
import { ControlSocket, type ControlDeps, type RequestHandlers } from './control';
import { addFrames, newCounters, prometheusText } from './counters';
import { takeHandover, writeHandover } from './handover';
import { Jobs, type JobDeps } from './jobs';
import { LoopWaits } from './loop-waits';
import { openDaemonLock, someoneListens } from './paths';
import type { Reply, Request } from './protocol';
import type { DaemonSettings } from './settings';

/** Default of `idleExitMs`. */
const DEFAULT_IDLE_EXIT_MS = 30_000;
/** How long a starting announcer waits for one that is exiting (or handing over) to let go of the lock. */
const LOCK_WAIT_MS = 5000;
/** Metrics are written at most this often. */
const METRICS_EVERY_MS = 1000;
/** After a turn that threw, the loop waits this long before the next: a throw that repeats must not spin. */
const PAUSE_AFTER_ERROR_MS = 100;

/** What the announcer needs from the process. */
export interface DaemonDeps extends Omit<JobDeps, 'closeInBackground'>, ControlDeps {
  /** close(2) on a worker thread (koffi's async queue, 256 calls at most); `done` hears the outcome. The announcer bounds how many are in flight. */
  closeInBackground(fd: number, done: (error?: unknown) => void): void;
  tryLock: TryLock;
  /** The announcer's own log (job logs come from jobLog). */
  log: Logger;
  /** Writes the metrics file atomically. */
  writeMetrics(file: string, text: string): void;
  /** This executable's build (src/build-id.ts). */
  build: string;
  /** Whether the file this announcer was started from has been replaced (an upgrade). */
  executableReplaced(): boolean;
  /** The runner of CNI commands, hosted on this announcer's loop (src/daemon/cni-host.ts). */
  commands(host: CommandHost): CniRunner;
}

/** What the announcer gives the commands it runs: its loop's waits, its own answers to control requests, its closer. */
export interface CommandHost {
  waits: LoopWaits;
  control(request: Request): Reply;
  closeInBackground(fd: number): void;
  /** The settings of the latest command's config win. */
  useSettings(settings: DaemonSettings): void;
}

/** Runs the announcer of deps.stateDir until idle for idleExitMs, SIGTERM, or a hand-over; returns at once when another one holds the lock. */
export async function runDaemon(deps: DaemonDeps): Promise<void> {
  const lockFd = openDaemonLock(deps.stateDir);
  try {
    const start = deps.timers.now();
    while (!deps.tryLock(lockFd)) {
      // Another announcer holds the lock. One that listens serves, and this one is not needed (two
      // shims started one each); one that does not is exiting or handing over: wait for it.
      if (deps.timers.now() - start > LOCK_WAIT_MS || someoneListens(deps.stateDir, deps.sockets)) return;
      await deps.timers.sleep(20);
    }
    await new Daemon(deps).run();
  } finally {
    try {
      closeSync(lockFd); // releases the lock
    } catch {
      // close(2) releases the lock even when it reports an error
    }
  }
}

class Daemon {
  private readonly counters = newCounters();
  private readonly closer: BackgroundCloser;
  private readonly jobs: Jobs;
  private readonly control: ControlSocket;
  private readonly waits: LoopWaits;
  private readonly runCni: CniRunner;
  private settings: DaemonSettings = { idleExitMs: DEFAULT_IDLE_EXIT_MS };
  private stopping = false;
  /** Set once a request from another build found this executable replaced: serve no more, hand over once running commands end. */
  private handingOver = false;
  /** The metrics as last written: they are written again only once they differ. */
  private metricsWritten: string;
  private metricsAt = 0;

  constructor(private readonly deps: DaemonDeps) {
    this.metricsWritten = prometheusText(this.counters);
    const calls = { closeInBackground: deps.closeInBackground, close: (fd: number) => deps.libc.close(fd) };
    this.closer = new BackgroundCloser(calls, (fd, error) => this.failed('cannot close a socket', error, { fd }));
    const closeInBackground = (fd: number): void => this.closer.close(fd);
    this.jobs = new Jobs({ ...deps, closeInBackground }, this.counters, (job) => {
      this.settings = { idleExitMs: job.idleExitMs ?? DEFAULT_IDLE_EXIT_MS, metricsFile: job.metricsFile };
    });
    this.waits = new LoopWaits(() => deps.timers.now());
    const useSettings = (settings: DaemonSettings): void => void (this.settings = settings);
    this.runCni = deps.commands({ waits: this.waits, control: (r) => this.handleSafely(r), closeInBackground, useSettings });
    const handlers: RequestHandlers = { control: (r) => this.handleSafely(r), cni: (c) => this.takeCommand(c) };
    this.control = new ControlSocket(deps, handlers, (what, error) => this.failed(what, error));
  }

  /** Runs until SIGTERM or SIGINT, idle for idleExitMs with no record holding work, or handed over; never throws once listening. */
  async run(): Promise<void> {
    const stop = (): void => void (this.stopping = true);
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    try {
      // Listen first: a command that found nobody listening wrote its record before, so recover() sees it.
      this.control.listen();
      this.guard('cannot remove the start marker', () => unlinkIfPresent(join(this.deps.stateDir, START_MARKER)), undefined);
      const handedOver = this.guard('cannot read the hand-over', () => takeHandover(this.deps.stateDir), new Map());
      this.guard('cannot read the records', () => this.jobs.recover(handedOver), undefined);
      this.deps.log.info('announcer started', { pid: process.pid, build: this.deps.build, stateDir: this.deps.stateDir, pending: this.jobs.size, handedOver: handedOver.size });
      await this.loop();
    } finally {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      this.guard('cannot close the pod sockets', () => this.jobs.close(), undefined);
      this.guard('cannot close the control socket', () => this.control.close(), undefined);
      this.guard('cannot close the sockets waiting to be closed', () => this.closer.closeWaiting(), undefined);
      this.flushMetrics(true);
      this.deps.log.info('announcer stopped', { pid: process.pid, handedOver: this.handingOver });
    }
  }

  private async loop(): Promise<void> {
    let idleSince = this.deps.timers.now();
    while (!this.stopping) {
      if (this.handingOver && !this.control.busy) {
        this.guard('cannot write the hand-over', () => writeHandover(this.deps.stateDir, this.jobs.progress()), undefined);
        break;
      }
      const busy = this.jobs.size > 0 || this.control.busy;
      if (!busy && this.deps.timers.now() - idleSince >= this.settings.idleExitMs && this.guard('cannot exit idle', () => this.exitIdle(), false)) break;
      try {
        await this.turn(this.deps.timers.bootMs());
      } catch (err) {
        this.failed('announcer turn failed', err);
        await this.deps.timers.sleep(PAUSE_AFTER_ERROR_MS);
      }
      // Idle time starts when the last work ends, not before the turn's wait (up to CHECK_MS) that ended it.
      if (busy || this.jobs.size > 0 || this.control.busy) idleSince = this.deps.timers.now();
    }
  }

  /** One wait for sockets or the next due time, then whatever is due. */
  private async turn(now: number): Promise<void> {
    // While handing over, bursts go on until the commands still running end: then where each stands is written.
    const reading = [...this.control.fds(), ...this.jobs.eventFds(), ...this.waits.fds()];
    const dueIn = Math.min(this.jobs.wakeAt(now), this.control.wakeAt()) - now;
    const { readable, writable } = this.deps.libc.pollInOut(reading, this.control.writeFds(), Math.max(0, Math.min(dueIn, this.waits.msLeft())));
    this.control.serve(readable, writable);
    this.waits.settle(readable);
    await this.jobs.runDue(this.deps.timers.bootMs(), readable);
    this.flushMetrics(false);
    // Let the commands whose waits settled run on, and completions from other threads (background closes).
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** Whether this announcer takes a CNI command: not another stateDir's, and none once a newer build is to serve. */
  private takeCommand(command: { env: Record<string, string>; stdin: string; build: string }): ReturnType<RequestHandlers['cni']> {
    if (stateDirOf(command.stdin) !== this.deps.stateDir) return { refused: 'another stateDir' };
    if (!this.handingOver && command.build !== this.deps.build && this.guard('cannot look at the executable', () => this.deps.executableReplaced(), false)) {
      this.handingOver = true;
      this.control.unlisten();
      this.deps.log.info('executable replaced: handing over to the new build', { build: this.deps.build, newBuild: command.build });
    }
    if (this.handingOver) return { refused: 'handover' };
    return this.runCni(command.env, command.stdin);
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

  /** Whether the announcer may exit: it stops listening, then reads the records again, as a command that just wrote its job may have found the socket closed. */
  private exitIdle(): boolean {
    this.control.unlisten();
    this.jobs.recover(new Map());
    if (this.jobs.size === 0) return true;
    this.control.listen();
    return false;
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
    if (request.op === 'status') {
      return { ok: true, status: { pid: process.pid, attachments: this.jobs.status(this.deps.timers.bootMs()), counters: structuredClone(this.counters) } };
    }
    if (request.op === 'cancel') {
      this.jobs.forget(request.record, 'cancelled');
      return { ok: true };
    }
    // Helper S's branch serves it (issue 20); the protocol already names it.
    if (request.op === 'handover') return { ok: false, error: 'handover is not served by this build' };
    if (request.settings) this.settings = request.settings;
    // What the ADD's round 1 sent.
    if (totalFrames(request.sent) > 0) {
      addFrames(this.counters, request.sent);
      this.counters.rounds.sent++;
    }
    // A job kept as read from its record had its conflicts counted from there.
    if (request.op === 'count' || !this.jobs.sync(request.record)) this.counters.conflicts += request.conflicts ?? 0;
    return { ok: true };
  }

  private flushMetrics(force: boolean): void {
    const file = this.settings.metricsFile;
    const now = this.deps.timers.now();
    if (!file || (!force && now - this.metricsAt < METRICS_EVERY_MS)) return;
    const text = prometheusText(this.counters);
    if (text === this.metricsWritten) return;
    try {
      this.deps.writeMetrics(file, text);
      this.metricsWritten = text;
      this.metricsAt = now;
    } catch (err) {
      this.counters.errors++;
      this.deps.log.warn('cannot write the metrics file', { file, error: err });
    }
  }
}
