// `announcer daemon <stateDir>`: the one background announcer of a stateDir.
// It sends every attachment's later rounds and waits for pods that were not
// ready during ADD, in one single-threaded loop around poll(2): the control
// socket, its clients, and the event sockets of deferred waits. Its work
// lives in the records of stateDir (written by ADD under the attachment's
// lock), so a killed announcer loses nothing: the next one reads them again,
// skipping rounds whose time has passed.
import { closeSync, constants, openSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log';
import type { FrameBudget } from '../announce/frame-budget';
import { addFrames, newCounters, prometheusText, type Counters } from './counters';
import { NO_FRAMES, totalFrames, type FrameCounts, type OutgoingFrame } from '../announce/round';
import { describeConflict, dropConflicting, withoutConflicts } from '../announce/conflict-probe';
import { probePod } from '../announce/probe-pod';
import type { PodSession } from '../announce/session';
import { listRecords, readRecordFile } from '../announce/state';
import type { TailJob } from '../announce/tail-job';
import type { Timers } from '../announce/timers';
import type { RateLimit } from '../announce/token-bucket';
import type { TryLock } from '../sys/flock';
import type { Libc } from '../sys/libc';
import { unlinkIfPresent } from '../sys/safe-file';
import { SysError } from '../sys/sys-error';
import type { UnixSockets } from '../sys/unix-socket';
import { DAEMON_LOCK, withSocketAddress } from './paths';
import { LATE_GRACE_MS, nextRound } from './progress';
import { decodeRequest, encodeMessage, MAX_MESSAGE_BYTES, type AttachmentStatus, type DaemonStatus, type Reply, type Request } from './protocol';
import type { DaemonSettings } from './settings';
import { closeSession, look, netnsAlive, openForJob, send, type DeferredSession, type RoundDeps } from './rounds';

/** The verb that runs the background announcer. */
export const DAEMON_VERB = 'daemon';
/** Default of `idleExitMs`. */
export const DEFAULT_IDLE_EXIT_MS = 30_000;
/** Deferred waits look at the netns path at least this often; no poll sleeps longer. */
const CHECK_MS = 500;
/** How long a starting announcer waits for one that is exiting to let go of the lock. */
const LOCK_WAIT_MS = 2000;
/** A client that sends nothing within this is dropped. */
const CLIENT_MS = 1000;
/** How long a socket an ADD handed over is kept, so that the ADD's own close is never the last. */
const HOLD_HANDED_OVER_MS = 2000;
const EPIPE = 32;
/** Metrics are written at most this often. */
const METRICS_EVERY_MS = 1000;

/** What the background announcer needs from the process. */
export interface DaemonDeps extends RoundDeps {
  stateDir: string;
  libc: Libc;
  sockets: UnixSockets;
  /** bootMs() schedules rounds (shared with ADD), sleep() yields. */
  timers: Timers;
  tryLock: TryLock;
  /** The announcer's own log, and one per job (each job carries its network's logFile). */
  log: Logger;
  jobLog(job: TailJob): Logger;
  /** The node-wide frame budget for a job's rateLimit (UNLIMITED when it has none). */
  budget(limit: RateLimit | undefined): FrameBudget;
  /** Writes the metrics file atomically. */
  writeMetrics(file: string, text: string): void;
  uid: number;
  /** The lock file, already locked by the client that started this announcer (fd 3), if any. */
  inheritedLockFd?: number | undefined;
  /**
   * The control socket, already listening, that the client that started this
   * announcer made (fd 4), if any: requests sent while it booted wait in its queue.
   */
  inheritedListenFd?: number | undefined;
  /** The settings of the ADD that started this announcer (its command line), until a request or job brings newer ones. */
  settings?: DaemonSettings | undefined;
}

interface Work {
  name: string;
  job: TailJob;
  log: Logger;
  firstRoundAt: number | undefined;
  /** Index of the next round; schedule.length when done. */
  next: number;
  dueAt: number | undefined;
  roundsSent: number;
  /** A delayed round was counted once as delayed. */
  delayed: boolean;
  /** While waiting for a pod that was not ready at ADD. */
  deferred?: { open?: DeferredSession; checkAt: number };
}

interface Client {
  fd: number;
  until: number;
}

/**
 * Runs the background announcer of deps.stateDir until it has been idle for
 * idleExitMs (or gets SIGTERM). Returns at once when another one holds the lock.
 */
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
    closeSync(lockFd); // releases the lock
  }
}

/** Whether two jobs are one ADD's (a new ADD of the attachment writes a new readyDeadline). */
function sameJob(a: TailJob, b: TailJob): boolean {
  return a.netnsId.dev === b.netnsId.dev && a.netnsId.ino === b.netnsId.ino && a.readyDeadline === b.readyDeadline && a.firstRoundAt === b.firstRoundAt;
}

/** Opens (creating it 0600, never through a symlink) the lock file every announcer of `stateDir` takes. */
export function openDaemonLock(stateDir: string): number {
  return openSync(join(stateDir, DAEMON_LOCK), constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
}

class Daemon {
  private readonly works = new Map<string, Work>();
  /**
   * The last job of each record whose work ended here. Its record keeps it
   * until DEL: without this, reading the records again (before exiting idle)
   * would take a deferred job up again and announce the pod once more, in a
   * loop until readyDeadline, and a pod gone mid-burst until its last round.
   */
  private readonly ended = new Map<string, TailJob>();
  private readonly clients: Client[] = [];
  /** One buffer for every request: a request is read and answered before the next. */
  private readonly receiveBuffer = Buffer.alloc(MAX_MESSAGE_BYTES);
  /** Sockets ADDs handed over, closed once their time comes. */
  private readonly handedOver: { fd: number; at: number }[] = [];
  private readonly counters: Counters = newCounters();
  private settings: DaemonSettings;
  private listenFd: number | undefined;
  /** The control socket our starter made, until listen() takes it. */
  private handedListenFd: number | undefined;
  private stopping = false;
  private metricsDirty = false;
  private metricsAt = 0;

  constructor(private readonly deps: DaemonDeps) {
    this.settings = deps.settings ?? { idleExitMs: DEFAULT_IDLE_EXIT_MS };
    this.handedListenFd = deps.inheritedListenFd;
  }

  async run(): Promise<void> {
    const stop = (): void => {
      this.stopping = true;
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    try {
      // Listen first: a client whose request found nobody listening wrote its record before, so recover() sees it.
      this.listen();
      this.recover();
      this.deps.log.info('background announcer started', { pid: process.pid, stateDir: this.deps.stateDir, pending: this.works.size });
      let idleSince = this.deps.timers.now();
      while (!this.stopping) {
        const now = this.deps.timers.bootMs();
        const busy = this.works.size > 0 || this.clients.length > 0;
        if (!busy && this.deps.timers.now() - idleSince >= this.settings.idleExitMs && this.exitIdle()) break;
        await this.turn(now);
        // Idle time starts when the last work ends, not before the turn's wait (up to CHECK_MS) that ended it.
        if (busy || this.works.size > 0 || this.clients.length > 0) idleSince = this.deps.timers.now();
      }
    } finally {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      for (const w of this.works.values()) this.dropDeferred(w);
      for (const c of this.clients) this.deps.sockets.close(c.fd);
      this.closeHandedOver(true);
      this.unlisten();
      this.flushMetrics(true);
      this.deps.log.info('background announcer stopped', { pid: process.pid });
    }
  }

  /** One wait for sockets or the next due time, then whatever is due. */
  private async turn(now: number): Promise<void> {
    const deferred = [...this.works.values()].filter((w) => w.deferred?.open);
    const fds = [this.listenFd!, ...this.clients.map((c) => c.fd), ...deferred.flatMap((w) => w.deferred!.open!.session.eventFds)];
    const ready = this.deps.libc.pollIn(fds, this.sleepMs(now));
    if (ready[0]) this.acceptAll();
    for (const client of [...this.clients]) this.serve(client);
    const after = this.deps.timers.bootMs();
    for (const w of [...this.works.values()]) {
      if (!this.works.has(w.name)) continue;
      if (w.deferred) {
        if (w.deferred.open) w.deferred.open.session.drainEvents();
        const changed = w.deferred.open?.session.eventFds.some((fd) => ready[fds.indexOf(fd)]) ?? false;
        if (changed || w.deferred.checkAt <= after) await this.checkDeferred(w, after);
      } else if (w.dueAt !== undefined && w.dueAt <= after) {
        await this.runRound(w, after);
      }
    }
    this.flushMetrics(false);
    this.closeHandedOver(false);
    // Let completions of work done on other threads (background closes) run.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  private closeHandedOver(all: boolean): void {
    const now = this.deps.timers.now();
    while (this.handedOver.length > 0 && (all || this.handedOver[0]!.at <= now)) this.deps.closeInBackground(this.handedOver.shift()!.fd);
  }

  private sleepMs(now: number): number {
    let wake = now + CHECK_MS;
    for (const w of this.works.values()) {
      if (w.deferred) wake = Math.min(wake, w.deferred.checkAt);
      else if (w.dueAt !== undefined) wake = Math.min(wake, w.dueAt);
    }
    for (const c of this.clients) wake = Math.min(wake, c.until);
    return Math.max(0, wake - now);
  }

  // --- the control socket ---

  private listen(): void {
    if (this.handedListenFd !== undefined) {
      [this.listenFd, this.handedListenFd] = [this.handedListenFd, undefined];
      return;
    }
    withSocketAddress(this.deps.stateDir, (address) => {
      unlinkIfPresent(address); // a stale socket of a killed announcer; we hold the lock
      this.listenFd = this.deps.sockets.listen(address);
    });
  }

  private unlisten(): void {
    if (this.listenFd === undefined) return;
    this.deps.sockets.close(this.listenFd);
    this.listenFd = undefined;
    try {
      withSocketAddress(this.deps.stateDir, (address) => unlinkIfPresent(address));
    } catch {
      // the next announcer removes it
    }
  }

  /**
   * Stops listening, then looks at the records once more: an ADD that wrote
   * its job just before may have found the socket closed. True when there is
   * really nothing left and the announcer may exit.
   */
  private exitIdle(): boolean {
    this.unlisten();
    this.recover();
    if (this.works.size === 0) return true;
    this.listen();
    return false;
  }

  private acceptAll(): void {
    for (;;) {
      const peer = this.deps.sockets.accept(this.listenFd!);
      if (!peer) return;
      if (peer.uid !== this.deps.uid) {
        this.deps.log.warn('refused a control connection from another user', { uid: peer.uid, pid: peer.pid });
        this.deps.sockets.close(peer.fd);
        continue;
      }
      this.clients.push({ fd: peer.fd, until: this.deps.timers.bootMs() + CLIENT_MS });
    }
  }

  private serve(client: Client): void {
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
      if (err instanceof SysError && err.errno === EPIPE) this.deps.log.debug('control client left before the reply');
      else this.deps.log.warn('control connection failed', { error: err });
    } finally {
      if (done) {
        this.deps.sockets.close(client.fd);
        this.clients.splice(this.clients.indexOf(client), 1);
      }
    }
  }

  private handle(request: Request): Reply {
    // A daemon started by an ADD without background work has no job to take its settings from.
    if ((request.op === 'sync' || request.op === 'count') && request.settings) this.settings = request.settings;
    switch (request.op) {
      case 'sync':
        this.bump(request.sent);
        // A job kept as read from its record had its conflicts counted from there.
        if (!this.sync(request.record)) this.countConflicts(request.conflicts ?? 0);
        return { ok: true };
      case 'cancel':
        this.forget(request.record, 'cancelled');
        return { ok: true };
      case 'count':
        this.bump(request.sent);
        this.countConflicts(request.conflicts ?? 0);
        return { ok: true };
      case 'status':
        return { ok: true, status: this.status() };
    }
  }

  private bump(sent: Parameters<typeof addFrames>[1]): void {
    if (totalFrames(sent) === 0) return;
    addFrames(this.counters, sent);
    this.counters.rounds.sent++;
    this.metricsDirty = true;
  }

  private countConflicts(n: number): void {
    if (n === 0) return;
    this.counters.conflicts += n;
    this.metricsDirty = true;
  }

  // --- work ---

  /** Schedules every pending job found in the records. */
  private recover(): void {
    const present = new Set<string>();
    for (const { file, read } of listRecords(this.deps.stateDir)) {
      const name = file.slice(this.deps.stateDir.length + 1);
      if (read.kind !== 'ok' || !read.record.job) continue;
      present.add(name);
      const ended = this.ended.get(name);
      if (!this.works.has(name) && !(ended && sameJob(ended, read.record.job))) this.schedule(name, read.record.job, 'recovered');
    }
    for (const name of this.ended.keys()) if (!present.has(name)) this.ended.delete(name);
  }

  /**
   * (Re)reads record `name` and schedules its job, or forgets the attachment
   * when it has none. True when this announcer had read the job from the
   * record before the ADD's request came (its conflicts and deferred wait
   * were counted then).
   */
  private sync(name: string): boolean {
    const read = readRecordFile(join(this.deps.stateDir, name));
    if (read.kind !== 'ok' || !read.record.job) {
      this.forget(name, read.kind === 'invalid' ? `invalid record: ${read.problem}` : 'no job');
      return false;
    }
    const ended = this.ended.get(name);
    if (ended && sameJob(ended, read.record.job)) return true; // read from the record, and already done here
    const current = this.works.get(name);
    if (current && sameJob(current.job, read.record.job)) {
      // Until a round went out here, it gets the grace of work handed over; after, it keeps
      // its progress (starting over would send a round twice).
      if (!current.deferred && current.roundsSent === 1) this.regrace(current);
      return true;
    }
    this.forget(name, undefined);
    this.schedule(name, read.record.job, 'added');
    return false;
  }

  /** Recovered work that its ADD turns out to have just handed over: rounds up to LATE_GRACE_MS late still go out. */
  private regrace(w: Work): void {
    const { index, dueAt } = nextRound(w.job.schedule, w.firstRoundAt!, 1, this.deps.timers.bootMs(), LATE_GRACE_MS);
    if (dueAt === undefined) return;
    w.next = index;
    w.dueAt = dueAt;
  }

  private schedule(name: string, job: TailJob, how: 'added' | 'recovered'): void {
    const log = this.deps.jobLog(job);
    this.settings = { idleExitMs: job.idleExitMs ?? DEFAULT_IDLE_EXIT_MS, metricsFile: job.metricsFile };
    const now = this.deps.timers.bootMs();
    const work: Work = { name, job, log, firstRoundAt: job.firstRoundAt, next: 1, dueAt: undefined, roundsSent: 0, delayed: false };
    if (job.firstRoundAt === undefined) {
      if (now >= job.readyDeadline) return;
      work.next = 0;
      work.deferred = { checkAt: now };
      this.counters.deferred.started++;
    } else {
      work.roundsSent = 1;
      // Recovered work may have been sent up to its last due round already: no grace for it.
      const { index, dueAt } = nextRound(job.schedule, job.firstRoundAt, 1, now, how === 'added' ? LATE_GRACE_MS : 0);
      if (dueAt === undefined) return;
      if (how === 'added' && index > 1) {
        this.counters.rounds.skippedLate += index - 1;
        log.info('rounds skipped: their time has passed', { skipped: index - 1 });
      }
      work.next = index;
      work.dueAt = dueAt;
    }
    this.works.set(name, work);
    // A job ADD handed over reports its conflicts in the sync request; one read from the records was never reported here.
    if (how === 'recovered' && job.conflicts) this.countConflicts(job.conflicts);
    log.debug('background work scheduled', { how, next: work.next + 1, of: job.schedule.length, deferred: work.deferred !== undefined });
  }

  /** Moves to the next round still worth sending; false when the burst is over. */
  private advance(w: Work, now: number): boolean {
    const { index, dueAt, skipped } = nextRound(w.job.schedule, w.firstRoundAt!, w.next, now);
    if (skipped > 0) {
      this.counters.rounds.skippedLate += skipped;
      w.log.info('rounds skipped: their time has passed', { skipped });
    }
    w.next = index;
    w.dueAt = dueAt;
    w.delayed = false;
    return dueAt !== undefined;
  }

  private forget(name: string, why: string | undefined): void {
    const w = this.works.get(name);
    if (!w) return;
    this.dropDeferred(w);
    this.works.delete(name);
    this.ended.set(name, w.job);
    if (why) w.log.info('background work ended', { why, roundsSent: w.roundsSent });
  }

  private dropDeferred(w: Work): void {
    if (w.deferred?.open) closeSession(this.deps, w.deferred.open.session);
    if (w.deferred) w.deferred.open = undefined;
  }

  /** Whether the attachment's record still holds this very job (DEL, GC or a new ADD end it). */
  private stillWanted(w: Work): boolean {
    const read = readRecordFile(join(this.deps.stateDir, w.name));
    return read.kind === 'ok' && read.record.job !== undefined && read.record.netnsId.ino === w.job.netnsId.ino && read.record.job.readyDeadline === w.job.readyDeadline;
  }

  private async checkDeferred(w: Work, now: number): Promise<void> {
    const d = w.deferred!;
    d.checkAt = now + CHECK_MS;
    if (!netnsAlive(w.job) || !this.stillWanted(w)) {
      this.counters.deferred.gone++;
      this.forget(w.name, 'pod gone before it was ready');
      return;
    }
    if (!d.open) {
      const opened = openForJob(this.deps, w.job);
      if ('gone' in opened) {
        this.counters.deferred.gone++;
        this.forget(w.name, opened.gone);
        return;
      }
      d.open = opened;
    }
    const seen = look(d.open, w.job, w.log);
    if (seen.kind === 'gone') {
      this.counters.deferred.gone++;
      this.forget(w.name, seen.why);
      return;
    }
    if (seen.kind === 'waiting') {
      if (now >= w.job.readyDeadline) {
        this.counters.deferred.timedOut++;
        w.log.warn('pod never became ready: not announcing', { waitingFor: seen.reasons });
        this.forget(w.name, 'ready timeout');
      }
      return;
    }
    // Round 1 of a pod is never dropped: it waits for the budget, at most until its ready deadline.
    const frames = this.probeDeferred(w, seen.session, seen.frames);
    let sent: FrameCounts = NO_FRAMES;
    const taken = await this.deps.budget(w.job.rateLimit).take(frames.length, () => this.deps.timers.bootMs(), now >= w.job.readyDeadline, () => {
      sent = send(seen.session, frames, w.log);
    });
    if (!taken.ok) {
      if (!w.delayed) this.counters.rateLimited.delayed++;
      w.delayed = true;
      d.checkAt = now + Math.min(taken.waitMs, CHECK_MS);
      return;
    }
    this.dropDeferred(w);
    w.deferred = undefined;
    this.counters.deferred.ready++;
    this.roundSent(w, sent);
    w.log.info('announced', { round: 1, of: w.job.schedule.length, frames: totalFrames(sent), deferred: true });
    w.firstRoundAt = now;
    w.next = 1;
    if (!this.advance(w, now)) this.forget(w.name, undefined);
  }

  /**
   * With conflictCheck, probes the IPv4 addresses of a deferred round 1 first;
   * those another host answers for are left out of this round and of the later
   * ones. `fail` acts as `warn` here: ADD has returned. Without a working probe
   * the round goes out as it would without conflictCheck.
   */
  private probeDeferred(w: Work, session: PodSession, frames: OutgoingFrame[]): OutgoingFrame[] {
    const check = w.job.conflictCheck;
    if (!check) return frames;
    let conflicts;
    try {
      const handOff = (fds: readonly number[]): void => fds.forEach((fd) => this.deps.closeInBackground(fd));
      conflicts = probePod({ libc: this.deps.libc, open: this.deps.open, timers: this.deps.timers, log: w.log, handOff }, session, w.job.netns, frames, check, false);
    } catch (err) {
      this.counters.errors++;
      w.log.error('conflict probe failed: announcing without it', { error: err });
      return frames;
    }
    if (conflicts.length === 0) return frames;
    if (check.action === 'fail') w.log.warn('conflictCheck is fail, but ADD has returned: leaving the addresses out instead', { conflicts: conflicts.length });
    for (const c of conflicts) w.log.warn(`address conflict: not announcing ${describeConflict(c)}`, { address: c.address, mac: c.mac, interface: c.interface });
    this.counters.conflicts += conflicts.length;
    this.metricsDirty = true;
    w.job = { ...w.job, interfaces: dropConflicting(w.job.interfaces, conflicts) };
    return withoutConflicts(frames, conflicts);
  }

  private async runRound(w: Work, now: number): Promise<void> {
    if (!netnsAlive(w.job) || !this.stillWanted(w)) {
      this.forget(w.name, 'pod or record gone');
      return;
    }
    const opened = openForJob(this.deps, w.job);
    if ('gone' in opened) {
      this.forget(w.name, opened.gone);
      return;
    }
    try {
      const seen = look(opened, w.job, w.log);
      if (seen.kind === 'gone') {
        this.forget(w.name, seen.why);
        return;
      }
      if (seen.kind === 'waiting') {
        this.counters.rounds.skippedNotReady++;
        w.log.info('pod not ready for this round: skipping it', { round: w.next + 1, waitingFor: seen.reasons });
      } else {
        let sent: FrameCounts = NO_FRAMES;
        const taken = await this.deps.budget(w.job.rateLimit).take(seen.frames.length, () => this.deps.timers.bootMs(), false, () => {
          sent = send(seen.session, seen.frames, w.log);
        });
        if (!taken.ok) {
          this.heldBack(w, now, taken.waitMs);
          return;
        }
        this.roundSent(w, sent);
        w.log.info('announced', { round: w.next + 1, of: w.job.schedule.length, frames: totalFrames(sent) });
      }
    } catch (err) {
      this.counters.errors++;
      w.log.error('round failed', { round: w.next + 1, error: err });
    } finally {
      closeSession(this.deps, opened.session);
    }
    w.next++;
    if (!this.advance(w, now)) this.forget(w.name, undefined);
    this.metricsDirty = true;
  }

  /** The budget held a later round back: it waits its turn, or is dropped once the next round is due. */
  private heldBack(w: Work, now: number, waitMs: number): void {
    const following = w.next + 1 < w.job.schedule.length ? w.firstRoundAt! + w.job.schedule[w.next + 1]! : Infinity;
    if (now + waitMs >= following) {
      this.counters.rateLimited.dropped++;
      w.log.warn('round dropped: the node-wide rate limit held it until the next one was due', { round: w.next + 1 });
      w.next++;
      if (!this.advance(w, now)) this.forget(w.name, undefined);
    } else {
      if (!w.delayed) this.counters.rateLimited.delayed++;
      w.delayed = true;
      w.dueAt = now + waitMs;
    }
    this.metricsDirty = true;
  }

  private roundSent(w: Work, sent: Parameters<typeof addFrames>[1]): void {
    addFrames(this.counters, sent);
    this.counters.rounds.sent++;
    w.roundsSent++;
    this.metricsDirty = true;
  }

  // --- reporting ---

  private status(): DaemonStatus {
    const now = this.deps.timers.bootMs();
    const attachments: AttachmentStatus[] = [...this.works.values()].map((w) => ({
      network: w.job.network,
      containerId: w.job.containerId,
      ifname: w.job.ifname,
      netns: w.job.netns,
      ...(w.dueAt !== undefined && !w.deferred ? { nextRoundInMs: Math.max(0, Math.round(w.dueAt - now)) } : {}),
      roundsSent: w.roundsSent,
      roundsPlanned: w.job.schedule.length,
      deferred: w.deferred !== undefined,
    }));
    return { pid: process.pid, attachments, counters: structuredClone(this.counters) };
  }

  private flushMetrics(force: boolean): void {
    const file = this.settings.metricsFile;
    if (!file || !this.metricsDirty) return;
    const now = this.deps.timers.now();
    if (!force && now - this.metricsAt < METRICS_EVERY_MS) return;
    try {
      this.deps.writeMetrics(file, prometheusText(this.counters));
      this.metricsDirty = false;
      this.metricsAt = now;
    } catch (err) {
      this.counters.errors++;
      this.deps.log.warn('cannot write the metrics file', { file, error: err });
    }
  }
}
