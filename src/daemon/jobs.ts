// The background announcer's table of work, one entry per attachment whose
// record holds a job: taken from the records (at start, and before exiting
// idle) or on an ADD's request, and dropped once its burst is over, its pod or
// record is gone, or a DEL cancels it.
import { join } from '../path';
import type { Logger } from '../log';
import { lockPath, releaseAttachmentLock, type LockFile } from '../announce/attachment-lock';
import { listRecords, readRecordFile, writeRecord } from '../announce/state';
import type { BackgroundJob } from '../announce/background-job';
import type { Counters } from './counters';
import { LATE_GRACE_MS, nextRound } from './progress';
import type { AttachmentStatus } from './protocol';
import { CHECK_MS, dropDeferred, netnsAlive, runDeferred, runRound, type Ended, type RoundDeps, type Work } from './rounds';

/** What the table needs from the process. */
export interface JobDeps extends RoundDeps {
  stateDir: string;
  /** Takes an attachment's lock, as ADD and DEL do. */
  lockFile: LockFile;
  /** A logger for one job (each job carries its network's logFile). */
  jobLog(job: BackgroundJob): Logger;
}

/** Whether two jobs are one ADD's (a new ADD of the attachment writes a new readyDeadline). */
function sameJob(a: BackgroundJob, b: BackgroundJob): boolean {
  return a.netnsId.dev === b.netnsId.dev && a.netnsId.ino === b.netnsId.ino && a.readyDeadline === b.readyDeadline && a.firstRoundAt === b.firstRoundAt;
}

/** The attachments with work, by record name. */
export class Jobs {
  private readonly works = new Map<string, Work>();
  /**
   * The last job of each record whose work ended here. Its record keeps it
   * until DEL: without this, reading the records again (before exiting idle)
   * would take a deferred job up again and announce the pod once more, in a
   * loop until readyDeadline, and a pod gone mid-burst until its last round.
   */
  private readonly ended = new Map<string, BackgroundJob>();

  /** `scheduled` hears of every job taken up (the announcer takes its settings from the latest). */
  constructor(
    private readonly deps: JobDeps,
    private readonly counters: Counters,
    private readonly scheduled: (job: BackgroundJob) => void,
  ) {}

  get size(): number {
    return this.works.size;
  }

  /** Schedules every pending job found in the records. */
  recover(): void {
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

  /** (Re)reads record `name` and schedules its job, or forgets it; true when this announcer had the job from the record already (its counts made then). */
  sync(name: string): boolean {
    const read = readRecordFile(join(this.deps.stateDir, name));
    if (read.kind !== 'ok' || !read.record.job) {
      this.forget(name, read.kind === 'invalid' ? `invalid record: ${read.problem}` : 'no job');
      return false;
    }
    const ended = this.ended.get(name);
    if (ended && sameJob(ended, read.record.job)) return true; // read from the record, and already done here
    const current = this.works.get(name);
    if (current && sameJob(current.job, read.record.job)) {
      // Recovered work that its ADD turns out to have just handed over: until a round went out here, rounds up to
      // LATE_GRACE_MS late still go out; after, it keeps its progress (starting over would send a round twice).
      if (!current.deferred && current.roundsSent === 1) {
        const { index, dueAt } = nextRound(current.job.schedule, current.firstRoundAt!, 1, this.deps.timers.bootMs(), LATE_GRACE_MS);
        if (dueAt !== undefined) [current.next, current.dueAt] = [index, dueAt];
      }
      return true;
    }
    this.forget(name, undefined);
    this.schedule(name, read.record.job, 'added');
    return false;
  }

  private schedule(name: string, job: BackgroundJob, how: 'added' | 'recovered'): void {
    const log = this.deps.jobLog(job);
    this.scheduled(job);
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
    if (how === 'recovered' && job.conflicts) this.counters.conflicts += job.conflicts;
    log.debug('background work scheduled', { how, next: work.next + 1, of: job.schedule.length, deferred: work.deferred !== undefined });
  }

  /** Ends the work of record `name`, if it has any; `why` is logged. */
  forget(name: string, why: string | undefined): void {
    const w = this.works.get(name);
    if (!w) return;
    dropDeferred(this.deps, w);
    this.works.delete(name);
    this.ended.set(name, w.job);
    if (why) w.log.info('background work ended', { why, roundsSent: w.roundsSent });
  }

  /** The event sockets of deferred waits, for the announcer's poll. */
  eventFds(): number[] {
    return [...this.works.values()].flatMap((w) => w.deferred?.open?.session.eventFds ?? []);
  }

  /** When the next work is due (boot ms), CHECK_MS from `now` at the latest. */
  wakeAt(now: number): number {
    let wake = now + CHECK_MS;
    for (const w of this.works.values()) {
      if (w.deferred) wake = Math.min(wake, w.deferred.checkAt);
      else if (w.dueAt !== undefined) wake = Math.min(wake, w.dueAt);
    }
    return wake;
  }

  /** Runs what is due at `now`: rounds, and deferred waits whose pod changed (an fd in `changed`) or whose check is due. */
  async runDue(now: number, changed: ReadonlySet<number>): Promise<void> {
    for (const w of [...this.works.values()]) {
      if (!this.works.has(w.name)) continue;
      let ended: Ended | undefined;
      if (w.deferred) {
        const open = w.deferred.open;
        open?.session.drainEvents();
        if (!open?.session.eventFds.some((fd) => changed.has(fd)) && w.deferred.checkAt > now) continue;
        if (!this.stillWanted(w)) {
          this.counters.deferred.gone++;
          ended = { why: 'pod gone before it was ready' };
        } else {
          ended = await runDeferred(this.deps, this.counters, w, now);
          if (!w.deferred) await this.recordFirstRound(w);
        }
      } else {
        if (w.dueAt === undefined || w.dueAt > now) continue;
        ended = this.stillWanted(w) ? await runRound(this.deps, this.counters, w, now) : { why: 'pod or record gone' };
      }
      if (ended) this.forget(w.name, ended.why);
    }
  }

  /**
   * Writes when a deferred round 1 went out into the record, so that an announcer started after
   * this one (this one killed, the node's runtime restarted) takes the burst up where it stands
   * instead of waiting for the pod again and announcing it once more. Under the attachment's lock,
   * and only while the record still holds this very job: an ADD or DEL acting on the attachment
   * right now replaces or removes it anyway.
   */
  private async recordFirstRound(w: Work): Promise<void> {
    const { containerId, ifname } = w.job;
    const file = join(this.deps.stateDir, w.name);
    let lock;
    try {
      lock = await this.deps.lockFile(lockPath(this.deps.stateDir, containerId, ifname), 0);
    } catch (err) {
      w.log.warn('cannot record that round 1 went out: an announcer started later would wait for the pod again', { error: err });
    }
    if (!lock) return;
    try {
      const read = readRecordFile(file);
      if (read.kind !== 'ok' || !read.record.job || !sameJob(read.record.job, w.job)) return;
      const job = { ...w.job, firstRoundAt: w.firstRoundAt };
      writeRecord(this.deps.stateDir, { ...read.record, job });
      w.job = job;
    } catch (err) {
      w.log.warn('cannot record that round 1 went out: an announcer started later would wait for the pod again', { error: err });
    } finally {
      releaseAttachmentLock(lock, file);
    }
  }

  /** Whether the pod is still there and the attachment's record still holds this very job (DEL, GC or a new ADD end it). */
  private stillWanted(w: Work): boolean {
    if (!netnsAlive(w.job)) return false;
    const read = readRecordFile(join(this.deps.stateDir, w.name));
    return read.kind === 'ok' && read.record.job !== undefined && sameJob(read.record.job, w.job);
  }

  /** Every attachment with work, for `announcer status`. */
  status(now: number): AttachmentStatus[] {
    return [...this.works.values()].map((w) => ({
      network: w.job.network,
      containerId: w.job.containerId,
      ifname: w.job.ifname,
      netns: w.job.netns,
      ...(w.dueAt !== undefined && !w.deferred ? { nextRoundInMs: Math.max(0, Math.round(w.dueAt - now)) } : {}),
      roundsSent: w.roundsSent,
      roundsPlanned: w.job.schedule.length,
      deferred: w.deferred !== undefined,
    }));
  }

  /** Closes the sockets of every deferred wait (the announcer stops). */
  close(): void {
    for (const w of this.works.values()) dropDeferred(this.deps, w);
  }
}
