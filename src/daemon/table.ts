// The announcer's table of work, one entry per attachment with a job: taken from an ADD it ran (in memory), from the
// bursts the announcer before it handed over, or from the records at start (recovery), and dropped once its burst is
// over, its pod is gone, or a DEL or GC cancels it. While the announcer runs, the table is the truth: a round asks the
// table, never the file. The records are its journal, written from the table whenever it changes (a deferred round 1
// gone out, a gateway verdict) under the attachment's lock, and read back only at the announcer's start.
import { readFileSync } from 'node:fs';
import type { AttachmentIds, BackgroundJob } from '../announce/background-job';
import type { FirstRoundReport, JobTable } from '../announce/context';
import type { GatewayVerdict } from '../announce/gateway-verdict';
import { checkGatewayVerdict, checkJob } from '../announce/record-schema';
import { totalFrames } from '../announce/round';
import type { PodSession } from '../announce/session';
import { listRecords, writeRecord, type AttachmentRecord } from '../announce/state';
import { join } from '../path';
import type { AttachmentStatus } from '../protocol';
import { sameFile } from '../sys/file-id';
import { replaceFile, unlinkIfPresent } from '../sys/safe-file';
import { attachmentOfRecord, HANDOVER_FILE } from '../state-files';
import { addFrames, countVerdict } from './metrics';
import type { Announcer } from './daemon';
import { adoptVisit, dropGateway, endGateway, gatewayBusy, gatewayFds, gatewayWakeAt, gatewayWorkOf } from './gateway';
import { runGatewayDue } from './gateway';
import { advance, afterThrow, dropDeferred, LATE_GRACE_MS, nextRound, podThere, runDeferred, runRound } from './rounds';
import { waitFds, type Ended, type Work } from './rounds';

/** Rounds that enter a pod (each a setns and its sockets) in one turn of the loop at most: answers wait no longer. */
export const ROUNDS_PER_TURN = 2;

/** How a job came to the table. */
export type How = 'added' | 'recovered' | 'handed over';

/** A record with a job: what the table takes. */
export type JobRecord = AttachmentRecord & { job: BackgroundJob };

/**
 * A burst handed over: its job as the record holds it, the index of its next round, and its gateway check's verdict so
 * far (the record gets it only once the check is over).
 */
export interface HandedOver {
  job: BackgroundJob;
  next: number;
  gateway?: GatewayVerdict | undefined;
}

/** The attachments with work, by record name. */
export class Jobs implements JobTable {
  private readonly works = new Map<string, Work>();
  /** Attachments whose work is over, with their gateway verdict: status shows them until DEL or GC. */
  private readonly settled = new Map<string, AttachmentStatus>();
  /** Attachments a command runs on, by record name, with how many: their rounds wait until it ends. */
  private readonly held = new Map<string, number>();

  constructor(private readonly a: Announcer) {}

  get size(): number {
    return this.works.size;
  }

  /**
   * Holds the rounds of record `name` while a command on its attachment runs (a DEL that waited runs before its pod's
   * rounds that fell due meanwhile); the returned function, called once, lets go.
   */
  hold(name: string): () => void {
    this.held.set(name, (this.held.get(name) ?? 0) + 1);
    return () => {
      const n = this.held.get(name)! - 1;
      if (n > 0) this.held.set(name, n);
      else this.held.delete(name);
    };
  }

  /**
   * Schedules every pending job found in the records; a burst in `handedOver` (by the announcer this one replaced) goes
   * on from its next round.
   */
  recover(handedOver: ReadonlyMap<string, HandedOver>): void {
    const { stateDir } = this.a;
    const invalid: Record<string, string> = {};
    for (const { file, read } of listRecords(stateDir)) {
      const name = file.slice(stateDir.length + 1);
      if (read.kind === 'invalid') invalid[name] = read.problem;
      if (read.kind !== 'ok' || this.works.has(name)) continue;
      const { record } = read;
      if (record.gateway) this.settled.set(name, settledStatus(record, record.gateway));
      if (record.job === undefined) continue;
      const jobRecord = record as JobRecord;
      const handed = handedOver.get(name);
      if (handed && sameJob(handed.job, record.job))
        this.schedule(name, { ...jobRecord, gateway: handed.gateway ?? record.gateway }, 'handed over', handed.next);
      else this.schedule(name, jobRecord, 'recovered');
    }
    // Records of another format (a pre-release build's) or another hand's: no burst is taken up from them.
    if (Object.keys(invalid).length > 0)
      this.a.log.warn('records this announcer cannot read: skipped (DEL and GC remove them)', { records: invalid });
  }

  /**
   * ADD of record `name`, taken at `takenAt` (boot ms), is done: its report is counted, and its job (if any) replaces
   * any work the record had. True when the table keeps `session` for the gateway check's first visit.
   */
  added(
    name: string,
    record: AttachmentRecord,
    report: FirstRoundReport,
    session?: PodSession,
    takenAt?: number,
  ): boolean {
    const { counters, metrics } = this.a;
    if (totalFrames(report.sent) > 0) {
      addFrames(counters, report.sent);
      counters.rounds.sent++;
      if (takenAt !== undefined) metrics.observe('addToFirstRound', (this.a.timers.bootMs() - takenAt) / 1000);
    }
    counters.conflicts += report.conflicts ?? 0;
    const { gateway } = report;
    if (gateway) {
      countVerdict(counters, gateway);
      for (const r of gateway.answered) metrics.observe('gatewayAnswer', r.afterMs / 1000);
    }
    this.forget(name, record.job ? undefined : 'no job');
    if (!record.job) return false;
    try {
      const w = this.schedule(name, { ...(record as JobRecord), gateway }, 'added');
      return session !== undefined && w !== undefined && adoptVisit(w, session);
    } catch (err) {
      // A job the table cannot take stays in its record, for the next announcer's recovery.
      this.a.failed('cannot take a job', err);
      return false;
    }
  }

  /** Ends the work of record `name` (DEL, GC, a failed ADD over an earlier one). True when there was work. */
  cancel(name: string): boolean {
    return this.forget(name, 'cancelled');
  }

  /** Where each burst under way stands (deferred waits left out: the next announcer waits for their pods anew). */
  progress(): Map<string, HandedOver> {
    const out = new Map<string, HandedOver>();
    for (const w of this.works.values())
      if (!w.deferred) out.set(w.name, { job: w.job, next: w.next, gateway: w.gateway?.verdict });
    return out;
  }

  /** `from`: the next round of a burst handed over (else round 2). */
  private schedule(name: string, record: JobRecord, how: How, from = 1): Work | undefined {
    const { job } = record;
    const work = newWork(this.a, name, record, how, from);
    if (!work) return undefined;
    if (!work.deferred && work.dueAt === undefined && !gatewayBusy(work)) {
      if (work.gateway) this.settled.set(name, settledStatus(job, work.gateway.verdict));
      return undefined;
    }
    this.works.set(name, work);
    // ADD reported its conflicts with it (added); one read from the records was never reported here.
    if (how === 'recovered' && job.conflicts) this.a.counters.conflicts += job.conflicts;
    const deferred = work.deferred !== undefined;
    work.log.debug('background work scheduled', { how, next: work.next + 1, of: job.schedule.length, deferred });
    return work;
  }

  /**
   * Ends the work of record `name`, if it has any, and forgets its verdict (DEL, GC, a new ADD); `why` is logged. True
   * when it had work.
   */
  private forget(name: string, why: string | undefined): boolean {
    this.settled.delete(name);
    const w = this.works.get(name);
    if (!w) return false;
    this.works.delete(name);
    try {
      dropGateway(this.a, w);
      dropDeferred(w);
    } catch (err) {
      this.a.counters.errors++;
      w.log.error('cannot close the pod sockets', { error: err });
    }
    if (why) w.log.info('background work ended', { why, roundsSent: w.roundsSent });
    return true;
  }

  /** Whether `w` is still the work of its record (DEL, GC and a new ADD end it, in memory). */
  private holds(w: Work): boolean {
    return this.works.get(w.name) === w;
  }

  /** Whether `w` still has its pod to work on: the table holds it, and its netns path names the netns ADD saw. */
  wanted(w: Work): boolean {
    return this.holds(w) && podThere(this.a, w);
  }

  /** Journals the gateway check's verdict: status shows it for as long as the attachment lives. */
  async recordVerdict(w: Work): Promise<void> {
    await this.journal(w, 'cannot record the gateway check: an announcer started later would not show it');
  }

  /**
   * Writes the record of `w` from the table, under the attachment's lock and only while the table still holds `w`: an
   * ADD or DEL acting on the attachment right now replaces or removes the record anyway. Failures are counted and
   * logged (`why`), never thrown.
   */
  private async journal(w: Work, why: string): Promise<void> {
    const failed = (err: unknown): void => {
      this.a.counters.errors++;
      w.log.warn(why, { error: err });
    };
    const lock = await this.a.attachmentLocks.take(attachmentOfRecord(w.name), 0).catch(failed);
    if (!lock) return;
    try {
      if (this.holds(w)) writeRecord(this.a.stateDir, recordOf(w), this.a.written);
    } catch (err) {
      failed(err);
    } finally {
      lock.release();
    }
  }

  /** The work is over (burst done, pod gone): a check without an answer has none; its verdict stays for status. */
  private async end(w: Work, why: string | undefined): Promise<void> {
    await endGateway(this.a, w);
    const status = w.gateway && settledStatus(w.job, w.gateway.verdict, w.roundsSent);
    this.forget(w.name, why);
    if (status) this.settled.set(w.name, status);
  }

  /** The event sockets of deferred waits, the receivers of their probes and of gateway asks, for the poll. */
  eventFds(): number[] {
    return [...this.works.values()].flatMap((w) => [...waitFds(w), ...gatewayFds(w)]);
  }

  /** When the next work is due (boot ms); Infinity when nothing is. */
  wakeAt(now: number): number {
    let wake = Infinity;
    for (const w of this.works.values()) {
      if (this.held.has(w.name)) continue;
      if (w.deferred) wake = Math.min(wake, w.deferred.checkAt);
      else if (w.dueAt !== undefined) wake = Math.min(wake, w.dueAt);
      wake = Math.min(wake, gatewayWakeAt(w, now));
    }
    return wake;
  }

  /**
   * Runs what is due at `now`: rounds, and deferred waits whose pod changed (an fd in `changed`) or whose check is due.
   * A work that throws is counted and logged, and the others run on. At most ROUNDS_PER_TURN rounds enter a pod.
   */
  async runDue(now: number, changed: ReadonlySet<number>): Promise<void> {
    const { rounds, gateway } = this.a.counters;
    const entered = (): number => rounds.sent + rounds.skippedNotReady + gateway.asks;
    const before = entered();
    for (const w of [...this.works.values()]) {
      // Bounded work per turn: the rest is still due, so the loop polls (timeout 0) and goes on.
      if (entered() - before >= ROUNDS_PER_TURN) break;
      if (!this.holds(w) || this.held.has(w.name)) continue;
      let ended: Ended | undefined;
      try {
        ended = w.deferred ? await this.runDeferredDue(w, now, changed) : this.runRoundDue(w, now);
      } catch (err) {
        ended = afterThrow(this.a, w, now, err);
      }
      if (!ended?.why) await runGatewayDue(this.a, w, now, changed);
      // A burst that is over keeps its work while its gateway check asks.
      if (ended?.why !== undefined || (!w.deferred && w.dueAt === undefined && !gatewayBusy(w)))
        await this.end(w, ended?.why);
    }
  }

  private async runDeferredDue(w: Work, now: number, changed: ReadonlySet<number>): Promise<Ended | undefined> {
    w.deferred!.open?.session.drainEvents();
    if (!waitFds(w).some((fd) => changed.has(fd)) && w.deferred!.checkAt > now) return undefined;
    if (!this.wanted(w)) {
      this.a.counters.deferred.gone++;
      return { why: 'pod gone before it was ready' };
    }
    const ended = runDeferred(this.a, w, now);
    if (!w.deferred) {
      // Journaled, so that an announcer started after this one takes the burst up where it stands instead of waiting
      // for the pod again and announcing it once more.
      await this.journal(
        w,
        'cannot record that round 1 went out: an announcer started later would wait for the pod again',
      );
    }
    return ended;
  }

  private runRoundDue(w: Work, now: number): Ended | undefined {
    if (w.dueAt === undefined || w.dueAt > now) return undefined;
    // Overdue by more than LATE_GRACE_MS (the announcer was stopped, or starved): skipped before it is sent.
    if (now - w.dueAt > LATE_GRACE_MS) {
      const ended = advance(this.a, w, now);
      if (ended || w.dueAt === undefined || w.dueAt > now) return ended;
    }
    return runRound(this.a, w, now, () => this.wanted(w));
  }

  /** Every attachment with work, or with a verdict to show, for `announcer status`. */
  status(now: number): AttachmentStatus[] {
    const settled = [...this.settled].filter(([name]) => !this.works.has(name)).map(([, status]) => status);
    return [...[...this.works.values()].map((w) => workStatus(w, now)), ...settled];
  }

  /**
   * Closes the sockets of every deferred wait and gateway check (the announcer stops); the first failure is thrown once
   * all are closed.
   */
  close(): void {
    const errors: unknown[] = [];
    for (const w of this.works.values()) {
      try {
        dropGateway(this.a, w);
        dropDeferred(w);
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length > 0) throw errors[0];
  }
}

/**
 * The work of `record`'s job now: a deferred wait, the next round due (`from`: the next round of a burst handed
 * over, else round 2), and its gateway check (`verdict` as ADD or the record left it); undefined when a deferred
 * wait's deadline has passed. A work with no round due and nothing to check is over at once.
 */
function newWork(a: Announcer, name: string, record: JobRecord, how: How, from: number): Work | undefined {
  const { job, originalMacs } = record;
  const log = a.jobLog(job);
  const now = a.timers.bootMs();
  const work: Work = { name, job, originalMacs, log, next: 1, dueAt: undefined, roundsSent: 0, delayed: false };
  const { firstRoundAt, readyDeadline, schedule } = job;
  if (firstRoundAt === undefined) {
    if (now >= readyDeadline) return undefined;
    work.next = 0;
    work.deferred = { checkAt: now };
    a.counters.deferred.started++;
  } else {
    work.roundsSent = from;
    // Recovered work may have been sent up to its last due round already: no grace for it.
    const grace = how === 'recovered' ? 0 : LATE_GRACE_MS;
    const { index, dueAt } = nextRound(schedule, firstRoundAt, from, now, grace);
    if (dueAt !== undefined && how !== 'recovered' && index > from) {
      a.counters.rounds.skippedLate += index - from;
      log.info('rounds skipped: their time has passed', { skipped: index - from });
    }
    work.next = index;
    work.dueAt = dueAt;
  }
  const when = { askNow: how === 'added' || work.dueAt === undefined, afterRoundOne: how === 'added' };
  work.gateway = gatewayWorkOf(job, record.gateway, now, when);
  return work;
}

/** Whether two jobs are one ADD's (a new ADD of the attachment writes a new readyDeadline). */
function sameJob(a: BackgroundJob, b: BackgroundJob): boolean {
  return sameFile(a.netnsId, b.netnsId) && a.readyDeadline === b.readyDeadline && a.firstRoundAt === b.firstRoundAt;
}

/** The record of `w` as the table holds it. */
function recordOf(w: Work): AttachmentRecord {
  const { network, containerId, ifname, netns, netnsId, caller } = w.job;
  const { originalMacs, gateway } = w;
  return { network, containerId, ifname, netns, netnsId, caller, originalMacs, job: w.job, gateway: gateway?.verdict };
}

/** An attachment with work: where its burst stands, and its gateway check. */
function workStatus(w: Work, now: number): AttachmentStatus {
  return {
    ...idsOf(w.job),
    ...(w.dueAt !== undefined && !w.deferred ? { nextRoundInMs: Math.max(0, Math.round(w.dueAt - now)) } : {}),
    roundsSent: w.roundsSent,
    roundsPlanned: w.job.schedule.length,
    deferred: w.deferred !== undefined,
    ...(w.gateway ? { gateway: w.gateway.verdict } : {}),
  };
}

/**
 * An attachment whose work is over (or never was), shown for its gateway verdict (status reads records with it too).
 */
export function settledStatus(
  ids: AttachmentIds & { schedule?: number[]; job?: BackgroundJob | undefined },
  gateway: GatewayVerdict,
  roundsSent?: number,
): AttachmentStatus {
  const planned = ids.schedule?.length ?? ids.job?.schedule.length ?? 1;
  return { ...idsOf(ids), roundsSent: roundsSent ?? planned, roundsPlanned: planned, deferred: false, gateway };
}

function idsOf(ids: AttachmentIds) {
  return { network: ids.network, containerId: ids.containerId, ifname: ids.ifname, netns: ids.netns };
}

/** Writes the bursts in progress for the next announcer, in `announcer-handover` (mode 0600, replaced atomically). */
export function writeHandover(stateDir: string, works: ReadonlyMap<string, HandedOver>): void {
  replaceFile(stateDir, HANDOVER_FILE, JSON.stringify(Object.fromEntries(works)), 0o600);
}

/** Reads and removes what the previous announcer handed over (empty when nothing, or nothing valid). */
export function takeHandover(stateDir: string): Map<string, HandedOver> {
  const file = join(stateDir, HANDOVER_FILE);
  const taken = new Map<string, HandedOver>();
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return taken; // none (ENOENT), or not JSON: the records alone say what to do
  } finally {
    unlinkIfPresent(file);
  }
  if (value === null || typeof value !== 'object') return taken;
  for (const [name, entry] of Object.entries(value as Record<string, unknown>)) {
    if (entry === null || typeof entry !== 'object') continue;
    const { job, next, gateway } = entry as Record<string, unknown>;
    const checked = checkJob(job);
    if (!checked || !Number.isInteger(next) || (next as number) < 1) continue;
    const verdict = gateway === undefined ? undefined : checkGatewayVerdict(gateway);
    taken.set(name, { job: checked, next: next as number, ...(verdict ? { gateway: verdict } : {}) });
  }
  return taken;
}
