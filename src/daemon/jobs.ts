// The announcer's table of work, one entry per attachment with a job: taken
// from the records at start (recovery), or from an ADD it ran (in memory), and
// dropped once its burst is over, its pod is gone, or a DEL or GC cancels it.
// While the announcer runs, the table is the truth; the records are its
// journal (job-record.ts).
import type { Logger } from '../log';
import { listRecords } from '../announce/state';
import type { BackgroundJob } from '../announce/background-job';
import type { Counters } from './counters';
import type { AttachmentStatus } from './protocol';
import { afterThrow, runDeferred, waitFds } from './deferred';
import type { HandedOver } from './handover';
import { hasJob, podThere, recordFirstRound, recordVerdict, sameJob } from './job-record';
import type { JobRecord, RecordDeps } from './job-record';
import { advance, CHECK_MS, dropDeferred, runRound, type Ended, type RoundDeps, type Work } from './rounds';
import { LATE_GRACE_MS } from './progress';
import type { GatewayVerdict } from '../announce/gateway-verdict';
import type { PodSession } from '../announce/session';
import { dropGateway, endGateway, runGatewayDue, type GatewayDeps } from './gateway-work';
import { adoptVisit, gatewayBusy, gatewayFds, gatewayWakeAt } from './gateway-state';
import { settledStatus, workStatus } from './job-status';
import { newWork, type How } from './new-work';

/** Rounds that enter a pod (each a setns and its sockets) in one turn of the loop at most: answers wait no longer. */
export const ROUNDS_PER_TURN = 2;

/** What the table needs from the process. */
export interface JobDeps extends RoundDeps, Omit<RecordDeps, 'holds'> {
  /** A logger for one job (each job carries its network's logFile). */
  jobLog(job: BackgroundJob): Logger;
  /** One gateway's time from round 1 to its answer (the metrics' histogram). */
  observeGatewayAnswer(seconds: number): void;
}

/** The attachments with work, by record name. */
export class Jobs {
  private readonly works = new Map<string, Work>();
  /** Attachments whose work is over, with their gateway verdict: status shows them until DEL or GC. */
  private readonly settled = new Map<string, AttachmentStatus>();
  /** Attachments a command runs on, by record name, with how many: their rounds wait until it ends. */
  private readonly held = new Map<string, number>();
  private readonly gatewayDeps: GatewayDeps;
  private readonly recordDeps: RecordDeps;
  constructor(
    private readonly deps: JobDeps,
    private readonly counters: Counters,
  ) {
    this.recordDeps = { ...deps, holds: (w) => this.holds(w) };
    const verdictTo = (w: Work): Promise<void> => recordVerdict(this.recordDeps, counters, w);
    this.gatewayDeps = { ...deps, recordVerdict: verdictTo, wanted: (w) => this.wanted(w) };
  }

  get size(): number {
    return this.works.size;
  }

  /**
   * Holds the rounds of record `name` while a command on its attachment runs (a DEL that waited runs before its pod's
   * rounds that fell due meanwhile); the returned function lets go.
   */
  hold(name: string): () => void {
    this.held.set(name, (this.held.get(name) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
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
    for (const { file, read } of listRecords(this.deps.stateDir)) {
      const name = file.slice(this.deps.stateDir.length + 1);
      if (read.kind !== 'ok' || this.works.has(name)) continue;
      const { record } = read;
      if (record.gateway) this.settled.set(name, settledStatus(record, record.gateway));
      if (!hasJob(record)) continue;
      const handed = handedOver.get(name);
      if (handed && sameJob(handed.job, record.job)) {
        const gateway = handed.gateway ?? record.gateway;
        this.schedule(name, { ...record, gateway }, 'handed over', handed.next);
      } else this.schedule(name, record, 'recovered');
    }
  }

  /**
   * Schedules the job an ADD of record `name` left, in place of any work the record had: `record` as ADD wrote it,
   * `gateway` as its round 1 left the check (its record keeps only a verdict worth showing). True when it keeps
   * `session` (ADD's, still open) for the check's first visit; false: the caller closes it.
   */
  take(name: string, record: JobRecord, gateway?: GatewayVerdict, session?: PodSession): boolean {
    this.forget(name, undefined);
    const w = this.schedule(name, { ...record, gateway }, 'added');
    return session !== undefined && w !== undefined && adoptVisit(w, session);
  }

  /** Where each burst under way stands (deferred waits left out: the next announcer waits for their pods anew). */
  progress(): Map<string, HandedOver> {
    const out = new Map<string, HandedOver>();
    for (const w of this.works.values())
      if (!w.deferred && w.firstRoundAt !== undefined)
        out.set(w.name, { job: { ...w.job, firstRoundAt: w.firstRoundAt }, next: w.next, gateway: w.gateway?.verdict });
    return out;
  }

  /** `from`: the next round of a burst handed over (else round 2). */
  private schedule(name: string, record: JobRecord, how: How, from = 1): Work | undefined {
    const { job, gateway: verdict, originalMacs } = record;
    const log = this.deps.jobLog(job);
    const came = { how, verdict, from };
    const work = newWork({ name, job, originalMacs, log }, came, this.deps.timers.bootMs(), this.counters);
    if (!work) return undefined;
    if (!work.deferred && work.dueAt === undefined && !gatewayBusy(work)) {
      if (work.gateway) this.settled.set(name, settledStatus(job, work.gateway.verdict));
      return undefined;
    }
    this.works.set(name, work);
    // A job ADD handed over reports its conflicts with it (JobHost.added); one read from the records was never
    // reported here.
    if (how === 'recovered' && job.conflicts) this.counters.conflicts += job.conflicts;
    log.debug('background work scheduled', {
      how,
      next: work.next + 1,
      of: job.schedule.length,
      deferred: work.deferred !== undefined,
    });
    return work;
  }

  /**
   * Ends the work of record `name`, if it has any, and forgets its verdict (DEL, GC, a new ADD); `why` is logged. True
   * when it had work.
   */
  forget(name: string, why: string | undefined): boolean {
    this.settled.delete(name);
    const w = this.works.get(name);
    if (!w) return false;
    this.works.delete(name);
    try {
      dropGateway(this.deps, w);
      dropDeferred(this.deps, w);
    } catch (err) {
      this.counters.errors++;
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
  private wanted(w: Work): boolean {
    return this.holds(w) && podThere(this.deps, w);
  }

  /** The work is over (burst done, pod gone): a check without an answer has none; its verdict stays for status. */
  private async end(w: Work, why: string | undefined): Promise<void> {
    await endGateway(this.gatewayDeps, this.counters, w);
    const status = w.gateway && settledStatus(w.job, w.gateway.verdict, w.roundsSent);
    this.forget(w.name, why);
    if (status) this.settled.set(w.name, status);
  }

  /** The event sockets of deferred waits, the receivers of their probes and of gateway asks, for the poll. */
  eventFds(): number[] {
    return [...this.works.values()].flatMap((w) => [...waitFds(w), ...gatewayFds(w)]);
  }

  /** When the next work is due (boot ms), CHECK_MS from `now` at the latest. */
  wakeAt(now: number): number {
    let wake = now + CHECK_MS;
    for (const w of this.works.values()) {
      if (this.held.has(w.name)) continue;
      if (w.deferred) wake = Math.min(wake, w.deferred.checkAt);
      else if (w.dueAt !== undefined) wake = Math.min(wake, w.dueAt);
      wake = Math.min(wake, gatewayWakeAt(w, now) ?? wake);
    }
    return wake;
  }

  /**
   * Runs what is due at `now`: rounds, and deferred waits whose pod changed (an fd in `changed`) or whose check is due.
   * A work that throws is counted and logged, and the others run on. At most ROUNDS_PER_TURN rounds enter a pod.
   */
  async runDue(now: number, changed: ReadonlySet<number>): Promise<void> {
    const { rounds, gateway } = this.counters;
    const entered = (): number => rounds.sent + rounds.skippedNotReady + gateway.asks;
    const before = entered();
    for (const w of [...this.works.values()]) {
      // Bounded work per turn: the rest is still due, so the loop polls (timeout 0) and goes on.
      if (entered() - before >= ROUNDS_PER_TURN) break;
      if (!this.holds(w) || this.held.has(w.name)) continue;
      let ended: Ended | undefined;
      try {
        ended = w.deferred ? await this.runDeferredDue(w, now, changed) : await this.runRoundDue(w, now);
      } catch (err) {
        ended = afterThrow(this.deps, this.counters, w, now, err);
      }
      if (!ended?.why) await this.runGatewayDue(w, now, changed);
      // A burst that is over keeps its work while its gateway check asks.
      if (ended?.why !== undefined || (!w.deferred && w.dueAt === undefined && !gatewayBusy(w)))
        await this.end(w, ended?.why);
    }
  }

  private async runDeferredDue(w: Work, now: number, changed: ReadonlySet<number>): Promise<Ended | undefined> {
    const open = w.deferred!.open;
    open?.session.drainEvents();
    if (!waitFds(w).some((fd) => changed.has(fd)) && w.deferred!.checkAt > now) return undefined;
    if (!this.wanted(w)) {
      this.counters.deferred.gone++;
      return { why: 'pod gone before it was ready' };
    }
    const ended = await runDeferred(this.deps, this.counters, w, now);
    if (!w.deferred) await recordFirstRound(this.recordDeps, this.counters, w);
    return ended;
  }

  private async runRoundDue(w: Work, now: number): Promise<Ended | undefined> {
    if (w.dueAt === undefined || w.dueAt > now) return undefined;
    // Overdue by more than LATE_GRACE_MS (the announcer was stopped, or starved): skipped before it is sent.
    if (now - w.dueAt > LATE_GRACE_MS) {
      const ended = advance(w, now, this.counters);
      if (ended || w.dueAt === undefined || w.dueAt > now) return ended;
    }
    return runRound(this.deps, this.counters, w, now, () => this.wanted(w));
  }

  /** The gateway check's due step; one that throws is counted and logged, and the rounds keep their schedule. */
  private async runGatewayDue(w: Work, now: number, changed: ReadonlySet<number>): Promise<void> {
    try {
      await runGatewayDue(this.gatewayDeps, this.counters, w, now, changed);
    } catch (err) {
      this.counters.errors++;
      w.log.error('gateway check failed', { error: err });
    }
  }

  /** Every attachment with work, for `announcer status`. */
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
        dropGateway(this.deps, w);
        dropDeferred(this.deps, w);
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length > 0) throw errors[0];
  }
}
