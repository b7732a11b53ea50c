// `announcer daemon <stateDir>`: the one background announcer of a stateDir.
// It sends every attachment's later rounds and waits for pods that were not
// ready during ADD, in one single-threaded loop around poll(2): the control
// socket, its clients, and the event sockets of deferred waits. Its work
// lives in the records of stateDir (written by ADD under the attachment's
// lock), so a killed announcer loses nothing: the next one reads them again,
// skipping rounds whose time has passed.
import { closeSync } from 'node:fs';
import type { Logger } from '../log';
import { totalFrames } from '../announce/round';
import type { TryLock } from '../sys/libc';
import { ControlSocket, type ControlDeps } from './control';
import { BackgroundCloser } from './background-closer';
import { addFrames, newCounters, prometheusText } from './counters';
import { Jobs, type JobDeps } from './jobs';
import { openDaemonLock } from './paths';
import type { Reply, Request } from './protocol';
import type { DaemonSettings } from './settings';

/** Default of `idleExitMs`. */
const DEFAULT_IDLE_EXIT_MS = 30_000;
/** How long a starting announcer waits for one that is exiting to let go of the lock. */
const LOCK_WAIT_MS = 2000;
/** Metrics are written at most this often. */
const METRICS_EVERY_MS = 1000;
/** After a turn that threw, the loop waits this long before the next: a throw that repeats must not spin. */
const PAUSE_AFTER_ERROR_MS = 100;

/** What the background announcer needs from the process. */
export interface DaemonDeps extends Omit<JobDeps, 'closeInBackground'>, Omit<ControlDeps, 'closeInBackground'> {
  /** close(2) on a worker thread (koffi's async queue, 256 calls at most); `done` hears the outcome. The announcer bounds how many are in flight. */
  closeInBackground(fd: number, done: (error?: unknown) => void): void;
  tryLock: TryLock;
  /** The announcer's own log (job logs come from jobLog). */
  log: Logger;
  /** Writes the metrics file atomically. */
  writeMetrics(file: string, text: string): void;
  /** The lock file, already locked by the client that started this announcer (fd 3), if any. */
  inheritedLockFd?: number | undefined;
  /** The control socket (fd 4) the client that started this announcer made, listening, if any: requests sent while it booted wait in its queue. */
  inheritedListenFd?: number | undefined;
  /** The settings of the ADD that started this announcer (its command line), until a request or job brings newer ones. */
  settings?: DaemonSettings | undefined;
}

/** Runs the background announcer of deps.stateDir until idle for idleExitMs or SIGTERM; returns at once when another one holds the lock. */
export async function runDaemon(deps: DaemonDeps): Promise<void> {
  // The client that started us locked the file and handed it over as fd 3 (see client.ts).
  const lockFd = deps.inheritedLockFd ?? openDaemonLock(deps.stateDir);
  try {
    const start = deps.timers.now();
    while (!deps.tryLock(lockFd)) {
      if (deps.timers.now() - start > LOCK_WAIT_MS) return; // another announcer runs
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
  private settings: DaemonSettings;
  private stopping = false;
  /** The metrics as last written: they are written again only once they differ. */
  private metricsWritten: string;
  private metricsAt = 0;

  constructor(private readonly deps: DaemonDeps) {
    this.settings = deps.settings ?? { idleExitMs: DEFAULT_IDLE_EXIT_MS };
    this.metricsWritten = prometheusText(this.counters);
    const calls = { closeInBackground: deps.closeInBackground, close: (fd: number) => deps.libc.close(fd) };
    this.closer = new BackgroundCloser(calls, (fd, error) => this.failed('cannot close a socket', error, { fd }));
    const inner = { ...deps, closeInBackground: (fd: number) => this.closer.close(fd) };
    this.jobs = new Jobs(inner, this.counters, (job) => {
      this.settings = { idleExitMs: job.idleExitMs ?? DEFAULT_IDLE_EXIT_MS, metricsFile: job.metricsFile };
    });
    this.control = new ControlSocket(inner, (request) => this.handleSafely(request), deps.inheritedListenFd, (what, error) => this.failed(what, error));
  }

  /** Runs until SIGTERM or SIGINT, or idle for idleExitMs with no record holding work; never throws once listening. */
  async run(): Promise<void> {
    const stop = (): void => {
      this.stopping = true;
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    try {
      // Listen first: a client whose request found nobody listening wrote its record before, so recover() sees it.
      this.control.listen();
      this.guard('cannot read the records', () => this.jobs.recover(), undefined);
      this.deps.log.info('background announcer started', { pid: process.pid, stateDir: this.deps.stateDir, pending: this.jobs.size });
      await this.loop();
    } finally {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      this.guard('cannot close the pod sockets', () => this.jobs.close(), undefined);
      this.guard('cannot close the control socket', () => this.control.close(), undefined);
      this.guard('cannot close the sockets waiting to be closed', () => this.closer.closeWaiting(), undefined);
      this.flushMetrics(true);
      this.deps.log.info('background announcer stopped', { pid: process.pid });
    }
  }

  private async loop(): Promise<void> {
    let idleSince = this.deps.timers.now();
    while (!this.stopping) {
      const busy = this.jobs.size > 0 || this.control.busy;
      if (!busy && this.deps.timers.now() - idleSince >= this.settings.idleExitMs && this.guard('cannot exit idle', () => this.exitIdle(), false)) break;
      try {
        await this.turn(this.deps.timers.bootMs());
      } catch (err) {
        this.failed('background announcer turn failed', err);
        await this.deps.timers.sleep(PAUSE_AFTER_ERROR_MS);
      }
      // Idle time starts when the last work ends, not before the turn's wait (up to CHECK_MS) that ended it.
      if (busy || this.jobs.size > 0 || this.control.busy) idleSince = this.deps.timers.now();
    }
  }

  /** One wait for sockets or the next due time, then whatever is due. */
  private async turn(now: number): Promise<void> {
    const fds = [...this.control.fds(), ...this.jobs.eventFds()];
    const ready = this.deps.libc.pollIn(fds, Math.max(0, Math.min(this.jobs.wakeAt(now), this.control.wakeAt()) - now));
    const readable = new Set(fds.filter((_, i) => ready[i]));
    this.control.serve(readable);
    await this.jobs.runDue(this.deps.timers.bootMs(), readable);
    this.flushMetrics(false);
    this.control.closeHandedOver(false);
    // Let completions of work done on other threads (background closes) run.
    await new Promise<void>((resolve) => setImmediate(resolve));
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

  /** Whether the announcer may exit: it stops listening, then reads the records again, as an ADD that just wrote its job may have found the socket closed. */
  private exitIdle(): boolean {
    this.control.unlisten();
    this.jobs.recover();
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
    // A daemon started by an ADD without background work has no job to take its settings from.
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
