// ADD of one attachment, in the announcer: find the pod interfaces, optionally set IP-derived MACs (each original
// recorded first, so that DEL, or a failing ADD, can put it back), send round 1 (first-round.ts), write the
// attachment's record (the announcer's journal) and hand the rest to the announcer's table of work, in memory. ADD
// runs inside the announcer's single-threaded loop: it never blocks it. Every wait on fds goes through `waits`, every
// sleep through `timers`, and the sockets whose close is slow go to `closeInBackground`.
import type { Logger } from '../log';
import type { AnnouncePlan } from '../plan';
import { basename } from '../path';
import { sameFile } from '../sys/file-id';
import { ensurePrivateDir, stateDirProblem } from '../sys/private-dir';
import { unlinkIfPresent } from '../sys/safe-file';
import { attachmentName } from '../state-files';
import { formatMac, parseMac } from '../wire/ethernet';
import type { AttachmentIds, BackgroundJob } from './background-job';
import { lockWaitMs, requireWanted, type CommandContext } from './context';
import {
  AddressConflictError,
  AttachmentBusyError,
  GatewayUnansweredError,
  InterfaceMissingError,
  NotWantedError,
  StateError,
} from './errors';
import { firstRound, type AddClock, type AddGatewayCheck, type FirstRound } from './first-round';
import { describeVerdict } from './gateway-verdict';
import type { RecordMemory } from './record-memory';
import { totalFrames } from './round';
import { openSession, type PodSession } from './session';
import { readRecordToActOn, recordPath, removeRecordQuietly, writeRecord, type AttachmentRecord } from './state';

/** A command on one attachment: the command's context and the attachment's log. */
export interface AttachmentCommand extends CommandContext {
  log: Logger;
}

/**
 * One attachment's ADD: the fields its background job carries as they are (conflictCheck absent: no probe before
 * round 1), and its own.
 */
export interface AddJob
  extends Pick<BackgroundJob, keyof AttachmentIds | 'pod' | 'logFile' | 'logLevel' | 'conflictCheck'> {
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
export async function announceOnAdd(deps: AttachmentCommand, job: AddJob): Promise<Map<number, string>> {
  try {
    ensurePrivateDir(job.stateDir);
  } catch (err) {
    throw new StateError(stateDirProblem(job.stateDir, err), { cause: err });
  }
  const file = recordPath(job.stateDir, job.containerId, job.ifname);
  const waitMs = lockWaitMs(job.addWaitMs);
  const lock = await deps.attachmentLocks.take(attachmentName(job.containerId, job.ifname), waitMs);
  if (!lock) throw new AttachmentBusyError(waitMs);
  try {
    return await addLocked(deps, job, file);
  } finally {
    lock.release();
  }
}

async function addLocked(deps: AttachmentCommand, job: AddJob, file: string): Promise<Map<number, string>> {
  const { log, timers } = deps;
  const clock: AddClock = { startedAt: timers.bootMs(), lockedAt: timers.now() };
  // A repeated ADD takes over the attachment; it keeps the MACs it must restore.
  const previous = readRecordToActOn(file, log, deps.written);
  const record = freshRecord(job, previous, log);
  const name = basename(file);
  let done: InPod | undefined;
  try {
    done = await inPod(deps, job, record, clock);
    const { later, gateway } = done.first;
    if (later) record.job = later;
    // The verdict goes into the record (and status), unless the check is off or nothing is routed.
    if (gateway && gateway.result !== 'off' && gateway.result !== 'no-gateway') record.gateway = gateway;
    // A record with nothing left to keep goes; none is written for an attachment that never had one.
    const keep = record.job || record.gateway || record.originalMacs.length > 0;
    if (keep || previous) deps.gate.acting();
    if (keep) persist(job.stateDir, record, deps.written);
    else if (previous) unpersist(file, deps.written);
  } catch (err) {
    done?.session.close();
    if (record.originalMacs.length > 0) writeRecordQuietly(job.stateDir, record, log, deps.written);
    else removeRecordQuietly(file, log, deps.written);
    // The record no longer holds the previous ADD's job: any work the table has for the attachment ends.
    deps.table.cancel(name);
    throw err;
  }
  handOver(deps, name, record, done);
  return done.macs;
}

/** What ADD did in the pod, and its session, still open. */
interface InPod {
  first: FirstRound;
  macs: Map<number, string>;
  session: PodSession;
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
async function inPod(deps: AttachmentCommand, job: AddJob, record: AttachmentRecord, clock: AddClock): Promise<InPod> {
  const { plan } = job;
  const names = plan.interfaces.map((i) => i.name);
  const session = openSession(deps, job.netns, names, plan.hostPeerNames);
  let macs: Map<number, string> | undefined;
  try {
    if (session.missing.length > 0) throw new InterfaceMissingError(session.missing, job.netns);
    macs = applyTargetMacs(deps, job, session, record);
    const first = await firstRound(deps, job, session, clock);
    requireWanted(deps, 'writing the record', totalFrames(first.sent), false);
    return { first, macs, session };
  } catch (err) {
    // Once the MACs are set: an address conflict under conflictCheck fail means nothing was announced, so the pod
    // keeps its own MAC. A caller gone (or a gateway silent under require): ADD fails, so the pod keeps it too.
    const undone =
      err instanceof AddressConflictError || err instanceof NotWantedError || err instanceof GatewayUnansweredError;
    if (macs && undone) restoreRecordedMacs(session, record, deps.log);
    session.close();
    throw err;
  }
}

/**
 * Hands the job left after round 1 (if any), what round 1 did, and the open session to the announcer's table of work;
 * closes the session unless the table keeps it.
 */
function handOver(deps: AttachmentCommand, name: string, record: AttachmentRecord, done: InPod): void {
  const { first, session } = done;
  const report = { sent: first.sent, conflicts: first.conflicts, gateway: first.gateway };
  let kept = false;
  try {
    kept = deps.table.added(name, record, report, session);
  } finally {
    if (!kept) session.close();
  }
  if (first.gateway && first.gateway.result !== 'pending')
    deps.log.info(`gateway check: ${describeVerdict(first.gateway)}`, { gateway: first.gateway });
  if (record.job) deps.log.debug('background work handed over', { rounds: record.job.schedule.length });
}

/** Writes `record`; a StateError when it cannot. */
function persist(stateDir: string, record: AttachmentRecord, memory: RecordMemory): void {
  try {
    writeRecord(stateDir, record, memory);
  } catch (err) {
    throw new StateError(`cannot write state in ${stateDir}: ${(err as Error).message}`, { cause: err });
  }
}

/** Removes the attachment's record; a StateError carrying the errno when it cannot. */
function unpersist(file: string, memory: RecordMemory): void {
  try {
    memory.forget(file);
    unlinkIfPresent(file);
  } catch (err) {
    throw new StateError(`cannot remove the state record ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/** Writes `record` on a failing ADD's way out (the original MACs must survive for DEL); a failure is logged. */
function writeRecordQuietly(stateDir: string, record: AttachmentRecord, log: Logger, memory: RecordMemory): void {
  try {
    writeRecord(stateDir, record, memory);
  } catch (err) {
    log.error('cannot record the original MACs', { error: err });
  }
}

/**
 * Sets the target MACs of the plan's interfaces in the pod, each interface's own MAC recorded first when `record` holds
 * no original for it yet (a DEL after a crash mid-way can still restore it). Returns the MACs by prevResult index.
 */
function applyTargetMacs(
  deps: AttachmentCommand,
  job: AddJob,
  session: PodSession,
  record: AttachmentRecord,
): Map<number, string> {
  const { log } = deps;
  const macs = new Map<number, string>();
  for (const plan of job.plan.interfaces) {
    if (!plan.targetMac) continue;
    const iface = session.interfaces.find((i) => i.name === plan.name)!;
    if (iface.kind === 'ipvlan') {
      log.warn('ipvlan shares its parent MAC: not setting the IP-derived MAC', { interface: plan.name });
      continue;
    }
    const link = session.pod.rtnl.linkByIndex(iface.index);
    if (link?.mac?.length !== 6) {
      log.warn('interface has no Ethernet address: not setting the IP-derived MAC', { interface: plan.name });
      continue;
    }
    const target = formatMac(plan.targetMac);
    if (!link.mac.equals(plan.targetMac)) {
      requireWanted(deps, 'setting MACs');
      if (!record.originalMacs.some((m) => m.name === plan.name)) {
        record.originalMacs.push({ name: plan.name, mac: formatMac(link.mac) });
        persist(job.stateDir, record, deps.written);
      }
      session.pod.rtnl.setMac(iface.index, plan.targetMac);
      log.info('set IP-derived MAC', { interface: plan.name, from: formatMac(link.mac), to: target });
    }
    if (plan.resultIndex !== undefined) macs.set(plan.resultIndex, target);
  }
  return macs;
}

/**
 * Restores each MAC `record` says was replaced; restored ones leave record.originalMacs, the others stay (logged) for
 * DEL to retry.
 */
function restoreRecordedMacs(session: PodSession, record: AttachmentRecord, log: Logger): void {
  record.originalMacs = record.originalMacs.filter(({ name, mac }) => {
    const iface = session.interfaces.find((i) => i.name === name);
    if (!iface) return true;
    try {
      session.pod.rtnl.setMac(iface.index, parseMac(mac));
      log.info('restored the original MAC', { interface: name, mac });
      return false;
    } catch (err) {
      log.error('cannot restore the original MAC: DEL will try again', { interface: name, mac, error: err });
      return true;
    }
  });
}
