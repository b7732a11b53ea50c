// ADD: find the pod interfaces, optionally set IP-derived MACs, send round 1
// (first-round.ts), write the attachment's record (the announcer's journal)
// and hand the rest to the announcer's table of work, in memory (JobHost).
// ADD runs inside the announcer's single-threaded loop: it never blocks it.
// Every wait on fds goes through `waits`, every sleep through `timers`, and
// the sockets whose close is slow go to `release`.
import type { Logger } from '../log';
import type { AnnouncePlan } from '../plan';
import type { Libc } from '../sys/libc';
import { sameFile } from '../sys/file-id';
import type { FrameBudget } from './frame-budget';
import { basename } from '../path';
import { openSession, type PodSession, type SocketOpener } from './session';
import { ensurePrivateDir } from '../sys/private-dir';
import { lockPath, lockWaitMs, type LockFile } from './attachment-lock';
import { readRecordToActOn, recordPath, removeRecordQuietly, type AttachmentRecord } from './state';
import { stateDirProblem } from '../sys/private-dir';
import type { AttachmentIds, BackgroundJob } from './background-job';
import type { JobHost } from './job-host';
import type { AddGatewayCheck } from './gateway-on-add';
import { describeVerdict, type GatewayVerdict } from './gateway-verdict';
import { persist, unpersist, writeRecordQuietly } from './add-record';
import type { RecordMemory } from './record-memory';
import { firstRound, type AddClock, type FirstRound } from './first-round';
import { applyTargetMacs } from './target-macs';
import { restoreRecordedMacs } from './undo-macs';
import type { Timers } from './timers';
import type { Waits } from './waits';
import {
  AddressConflictError,
  AttachmentBusyError,
  GatewayUnansweredError,
  InterfaceMissingError,
  NotWantedError,
  StateError,
} from './errors';
import { totalFrames } from './round';
import { requireWanted, type CommandGate } from './wanted';

/** What ADD needs from the outside world: the announcer, which alone runs ADD, injects it (src/daemon/cni-host.ts). */
export interface AddDeps {
  libc: Libc;
  open: SocketOpener;
  timers: Timers;
  /** Every wait on fds (pod readiness, the conflict probe's window, the gateway check's): the announcer loop's poll. */
  waits: Waits;
  log: Logger;
  /** The announcer's table of work, which takes each ADD's job and report in memory. */
  host: JobHost;
  /**
   * Whether ADD may still act (its caller connected, its deadline ahead, the announcer not stopping it): asked before
   * each side effect (a MAC, the probe, round 1, the record); once not, ADD undoes what it did and stops
   * (NotWantedError).
   */
  gate: CommandGate;
  /** The node-wide frame budget that round 1 draws from. */
  budget: FrameBudget;
  /** Takes the attachment's lock within a timeout (in memory: daemon/memory-locks.ts); undefined if it stays held. */
  lockFile: LockFile;
  /** What the announcer wrote to each record: a record read back with those bytes is not checked again. */
  written: RecordMemory;
  /**
   * Takes AF_PACKET sockets (ADD's packet socket, the probe's receivers) whose
   * last close waits for an RCU grace period (8-16 ms): the announcer closes
   * them on another thread. Never throws.
   */
  release(fds: readonly number[]): void;
}

/** The fields of an ADD that its background job carries as they are (conflictCheck absent: no probe before round 1). */
type SharedWithJob = keyof AttachmentIds | 'pod' | 'logFile' | 'logLevel' | 'conflictCheck';

/** One attachment's ADD. */
export interface AddJob extends Pick<BackgroundJob, SharedWithJob> {
  stateDir: string;
  plan: AnnouncePlan;
  /** False when the attachment opted out: MACs are still applied, nothing is sent. */
  announce: boolean;
  addWaitMs: number;
  readyTimeoutMs: number;
  gatewayCheck: AddGatewayCheck;
}

/**
 * Runs ADD's announcement under the attachment's lock (AttachmentBusyError past lockWaitMs) in a private stateDir;
 * returns the MACs it set, by prevResult index.
 */
export async function announceOnAdd(deps: AddDeps, job: AddJob): Promise<Map<number, string>> {
  try {
    ensurePrivateDir(job.stateDir);
  } catch (err) {
    throw new StateError(stateDirProblem(job.stateDir, err), { cause: err });
  }
  const file = recordPath(job.stateDir, job.containerId, job.ifname);
  const waitMs = lockWaitMs(job.addWaitMs);
  let lock;
  try {
    lock = await deps.lockFile(lockPath(job.stateDir, job.containerId, job.ifname), waitMs);
  } catch (err) {
    throw new StateError(`cannot lock the attachment in ${job.stateDir}: ${(err as Error).message}`, { cause: err });
  }
  if (!lock) throw new AttachmentBusyError(waitMs);
  try {
    return await addLocked(deps, job, file);
  } finally {
    lock.release();
  }
}

async function addLocked(deps: AddDeps, job: AddJob, file: string): Promise<Map<number, string>> {
  const { log, timers } = deps;
  const clock: AddClock = { startedAt: timers.bootMs(), lockedAt: timers.now() };
  // A repeated ADD takes over the attachment; it keeps the MACs it must restore.
  const previous = readRecordToActOn(file, log, deps.written);
  const record = freshRecord(job, previous, log);
  const name = basename(file);
  let done: InPod | undefined;
  try {
    done = await inPod(deps, job, record, clock);
    if (done.first.later) record.job = done.first.later;
    if (worthKeeping(done.first.gateway)) record.gateway = done.first.gateway;
    if (record.job || record.gateway || record.originalMacs.length > 0) {
      deps.gate.acting();
      persist(job.stateDir, record, deps.written);
    } else if (previous) {
      deps.gate.acting();
      unpersist(file, deps.written);
    }
  } catch (err) {
    if (done) closePod(deps, done.session);
    if (record.originalMacs.length > 0) writeRecordQuietly(job.stateDir, record, log, deps.written);
    else removeRecordQuietly(file, log, deps.written);
    // The record no longer holds the previous ADD's job: any work the table has for the attachment ends.
    deps.host.cancel(name);
    throw err;
  }
  handOver(deps, name, record, done.first, done.session);
  return done.macs;
}

/** What ADD did in the pod, and its session, still open. */
interface InPod {
  first: FirstRound;
  macs: Map<number, string>;
  session: PodSession;
}

/** Closes ADD's pod session, its packet socket through `release`. */
function closePod(deps: AddDeps, session: PodSession): void {
  deps.release([session.pod.packet.release()]);
  session.close();
}

/**
 * This ADD's record: the previous record's original MACs are kept only when it was made for the same netns (the path
 * may name a new pod by now).
 */
function freshRecord(job: AddJob, previous: AttachmentRecord | undefined, log: Logger): AttachmentRecord {
  const sameNetns = previous !== undefined && sameFile(previous.netnsId, job.netnsId);
  if (previous && !sameNetns && previous.originalMacs.length > 0) {
    log.info('the previous record was for another netns: not keeping its original MACs', { netns: previous.netns });
  }
  const { network, containerId, ifname, netns, netnsId, caller } = job;
  return { network, containerId, ifname, netns, netnsId, caller, originalMacs: sameNetns ? previous.originalMacs : [] };
}

/**
 * Everything ADD does inside the pod: target MACs, then round 1. Its session stays open for the table (handOver), or
 * is closed on a failure.
 */
async function inPod(deps: AddDeps, job: AddJob, record: AttachmentRecord, clock: AddClock): Promise<InPod> {
  const { plan } = job;
  const session = openSession(
    deps,
    job.netns,
    plan.interfaces.map((i) => i.name),
    plan.hostPeerNames,
  );
  try {
    if (session.missing.length > 0) throw new InterfaceMissingError(session.missing, job.netns);
    const macs = applyTargetMacs(session, plan.interfaces, record, deps.log, (original) => {
      requireWanted(deps, 'setting MACs');
      if (!original) return;
      record.originalMacs.push(original);
      persist(job.stateDir, record, deps.written);
    });
    try {
      const first = await firstRound(deps, job, session, clock);
      requireWanted(deps, 'writing the record', totalFrames(first.sent), false);
      return { first, macs, session };
    } catch (err) {
      // An address conflict under conflictCheck fail: nothing was announced, so the pod keeps its own MAC. A caller
      // gone: ADD fails for it, so the pod keeps its own MAC too.
      if (err instanceof AddressConflictError || err instanceof NotWantedError || err instanceof GatewayUnansweredError)
        restoreRecordedMacs(session, record, deps.log);
      throw err;
    }
  } catch (err) {
    closePod(deps, session);
    throw err;
  }
}

/** Whether a verdict goes into the record (and status): not when the check is off or nothing is routed. */
function worthKeeping(verdict: GatewayVerdict | undefined): verdict is GatewayVerdict {
  return verdict !== undefined && verdict.result !== 'off' && verdict.result !== 'no-gateway';
}

/**
 * Hands the job left after round 1 (if any), what round 1 did, and the open session to the announcer's table of work;
 * closes the session unless the table keeps it.
 */
function handOver(deps: AddDeps, name: string, record: AttachmentRecord, first: FirstRound, session: PodSession): void {
  const report = { sent: first.sent, conflicts: first.conflicts, gateway: first.gateway };
  let kept = false;
  try {
    kept = deps.host.added(name, record, report, session);
  } finally {
    if (!kept) closePod(deps, session);
  }
  if (first.gateway && first.gateway.result !== 'pending')
    deps.log.info(`gateway check: ${describeVerdict(first.gateway)}`, { gateway: first.gateway });
  if (record.job) deps.log.debug('background work handed over', { rounds: record.job.schedule.length });
}
