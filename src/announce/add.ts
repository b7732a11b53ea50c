// ADD: find the pod interfaces, optionally set IP-derived MACs, wait (bounded)
// until the pod can be heard, send round 1, and leave the rest to the tail.
import { CniError, ErrorCode } from '../cni/errors';
import { silentLogger, type Logger, type LogLevel } from '../log';
import type { AnnouncePlan, InterfacePlan } from '../plan';
import type { Libc } from '../sys/libc';
import type { NetnsId } from '../sys/netns';
import { signalProcess, type ProcessId } from '../sys/processes';
import { formatMac } from '../wire/mac';
import type { ResolvedInterface } from './pod-interface';
import { sendRound, totalFrames } from './round';
import { openSession, waitReady, type PodSession } from './session';
import { ensurePrivateDir } from '../sys/private-dir';
import { lockPath, lockWaitMs, releaseAttachmentLock, type LockFile } from './attachment-lock';
import { readRecordToActOn, recordPath, removeRecordQuietly, stateDirProblem, writeRecord, type AttachmentRecord } from './state';
import { stopTail } from './stop-tail';
import type { TailJob } from './tail-job';
import type { Timers } from './timers';

/** What ADD needs from the outside world. */
export interface AddDeps {
  libc: Libc;
  timers: Timers;
  log: Logger;
  /** Starts the detached background tail on the record file that holds its job; returns its identity. */
  startTail(recordFile: string): ProcessId;
  /** Takes a lock file (see attachment-lock.ts). */
  lockFile: LockFile;
  /** Closes `fds` without making this process's exit wait for them (see sys/close-after-exit.ts). */
  closeAfterExit(fds: readonly number[]): void;
}

/** One attachment's ADD. */
export interface AddJob {
  network: string;
  containerId: string;
  ifname: string;
  netns: string;
  netnsId: NetnsId;
  stateDir: string;
  plan: AnnouncePlan;
  /** False when the attachment opted out: MACs are still applied, nothing is sent. */
  announce: boolean;
  addWaitMs: number;
  readyTimeoutMs: number;
  logFile?: string | undefined;
  logLevel: LogLevel;
}

/**
 * Runs ADD's announcement; returns the MACs it set, by prevResult interface
 * index. stateDir must be private (code 105 naming the fix otherwise). The
 * attachment's lock is held throughout, so a DEL or another ADD of the same
 * attachment waits for this one to finish; if it stays held longer than
 * lockWaitMs, code 11 (try again later) and nothing is changed.
 */
export async function announceOnAdd(deps: AddDeps, job: AddJob): Promise<Map<number, string>> {
  try {
    ensurePrivateDir(job.stateDir);
  } catch (err) {
    throw new CniError(ErrorCode.StateFailure, stateDirProblem(job.stateDir, err), { cause: err });
  }
  const file = recordPath(job.stateDir, job.containerId, job.ifname);
  const waitMs = lockWaitMs(job.addWaitMs);
  let lock;
  try {
    lock = await deps.lockFile(lockPath(job.stateDir, job.containerId, job.ifname), waitMs);
  } catch (err) {
    throw new CniError(ErrorCode.StateFailure, `cannot lock the attachment in ${job.stateDir}: ${(err as Error).message}`, { cause: err });
  }
  if (!lock) {
    throw new CniError(ErrorCode.TryAgainLater, `another command on this attachment still runs after ${waitMs} ms: try again later`);
  }
  try {
    return await addLocked(deps, job, file);
  } finally {
    releaseAttachmentLock(lock, file);
  }
}

async function addLocked(deps: AddDeps, job: AddJob, file: string): Promise<Map<number, string>> {
  const { log, timers } = deps;
  const startedAt = timers.bootMs();
  // A repeated ADD takes over the attachment: stop its tail, keep the MACs it must restore.
  const previous = readRecordToActOn(file, log);
  if (previous?.tail) await stopTail(previous.tail, timers);
  // MACs recorded in another netns (the path now names a new pod) are not this pod's to restore.
  const sameNetns = previous !== undefined && previous.netnsId.dev === job.netnsId.dev && previous.netnsId.ino === job.netnsId.ino;
  if (previous && !sameNetns && previous.originalMacs.length > 0) {
    log.info('the previous record was for another netns: not keeping its original MACs', { netns: previous.netns });
  }
  const record: AttachmentRecord = {
    network: job.network,
    containerId: job.containerId,
    ifname: job.ifname,
    netns: job.netns,
    netnsId: job.netnsId,
    originalMacs: sameNetns ? previous.originalMacs : [],
  };
  const plan = job.plan;
  // A fresh node process takes 100-300 ms to boot. When round 2 is due sooner
  // than that, start the tail now, before any pod socket is open (none can leak
  // into it), so that it boots while ADD works; it waits for its job. Otherwise
  // start it after round 1: booting alongside ADD would slow ADD down.
  if (needsLaterRounds(job) && job.plan.schedule[1]! < EARLY_TAIL_BELOW_MS) startTail(deps, record, job, startedAt);
  let tail: TailJob | undefined;
  let macs: Map<number, string>;
  try {
    const session = openSession(deps.libc, job.netns, plan.interfaces.map((i) => i.name), plan.hostPeerNames);
    try {
      if (session.missing.length > 0) {
        throw new CniError(ErrorCode.InterfaceNotFound, `pod interface ${session.missing.map((n) => `"${n}"`).join(', ')} not found in ${job.netns}`);
      }
      macs = applyTargetMacs(session, plan.interfaces, record, job.stateDir, log);
      tail = await firstRound(deps, job, session, startedAt);
    } finally {
      deps.closeAfterExit([session.pod.packet.release()]);
      session.close();
    }
    if (tail) {
      record.job = tail;
      delete record.jobDeadline;
      // Not started early: start it now that the pod's sockets are closed.
      if (!record.tail) startTail(deps, record, job, startedAt);
    } else if (record.tail) {
      signalProcess(record.tail, 'SIGTERM'); // started early, not needed after all
      record.tail = undefined;
    }
    if (record.tail || record.originalMacs.length > 0) persist(job.stateDir, record);
    else if (previous || record.jobDeadline) removeOrFail(file);
  } catch (err) {
    // A tail nobody can find would outlive its attachment.
    if (record.tail) signalProcess(record.tail, 'SIGKILL');
    record.tail = undefined;
    if (record.originalMacs.length > 0) writeRecordQuietly(job.stateDir, record, log);
    else removeRecordQuietly(file, log);
    throw err;
  }
  if (record.tail) log.debug('background tail has its job', { pid: record.tail.pid, rounds: tail?.schedule.length });
  return macs;
}

/** Round 2 due sooner than this after round 1: the tail is started at the beginning of ADD. */
const EARLY_TAIL_BELOW_MS = 500;

/** Whether rounds after the first are planned. */
function needsLaterRounds(job: AddJob): boolean {
  const hasAddresses = job.plan.interfaces.some((i) => i.ipv4.length + i.ipv6.length > 0);
  return job.announce && hasAddresses && job.plan.schedule.length > 1;
}

/** How long an early tail waits for ADD to hand it a job before it gives up. */
const JOB_GRACE_MS = 10_000;

function startTail(deps: AddDeps, record: AttachmentRecord, job: AddJob, startedAt: number): void {
  if (!record.job) record.jobDeadline = startedAt + job.addWaitMs + JOB_GRACE_MS;
  // Recorded before it starts, so that a DEL after a crash finds and stops it.
  persist(job.stateDir, record);
  try {
    record.tail = deps.startTail(recordPath(job.stateDir, job.containerId, job.ifname));
    persist(job.stateDir, record);
  } catch (err) {
    if (record.tail) signalProcess(record.tail, 'SIGKILL');
    record.tail = undefined;
    deps.log.error('cannot start the background tail: later rounds will not be sent', { error: err });
  }
}

function writeRecordQuietly(stateDir: string, record: AttachmentRecord, log: Logger): void {
  try {
    writeRecord(stateDir, record);
  } catch (err) {
    log.error('cannot record the original MACs', { error: err });
  }
}

function removeOrFail(file: string): void {
  if (!removeRecordQuietly(file, silentLogger)) throw new CniError(ErrorCode.StateFailure, `cannot remove the state record ${file}`);
}

function persist(stateDir: string, record: AttachmentRecord): void {
  try {
    writeRecord(stateDir, record);
  } catch (err) {
    throw new CniError(ErrorCode.StateFailure, `cannot write state in ${stateDir}: ${(err as Error).message}`, { cause: err });
  }
}

function applyTargetMacs(
  session: PodSession,
  interfaces: readonly InterfacePlan[],
  record: AttachmentRecord,
  stateDir: string,
  log: Logger,
): Map<number, string> {
  const macs = new Map<number, string>();
  for (const plan of interfaces) {
    if (!plan.targetMac) continue;
    const iface = session.interfaces.find((i) => i.name === plan.name)!;
    if (iface.kind === 'ipvlan') {
      log.warn('ipvlan shares its parent MAC: not setting the IP-derived MAC', { interface: plan.name });
      continue;
    }
    const link = session.pod.rtnl.linkByIndex(iface.index);
    if (!link?.mac || link.mac.length !== 6) {
      log.warn('interface has no Ethernet address: not setting the IP-derived MAC', { interface: plan.name });
      continue;
    }
    const target = formatMac(plan.targetMac);
    if (!link.mac.equals(plan.targetMac)) {
      const recorded = record.originalMacs.some((m) => m.name === plan.name);
      // Record first: a DEL after a crash mid-way can still restore the original.
      if (!recorded) {
        record.originalMacs.push({ name: plan.name, mac: formatMac(link.mac) });
        persist(stateDir, record);
      }
      session.pod.rtnl.setMac(iface.index, plan.targetMac);
      log.info('set IP-derived MAC', { interface: plan.name, from: formatMac(link.mac), to: target });
    }
    if (plan.resultIndex !== undefined) macs.set(plan.resultIndex, target);
  }
  return macs;
}

/** Sends round 1 if the pod gets ready within addWaitMs; returns the tail's job, if any. */
async function firstRound(deps: AddDeps, job: AddJob, session: PodSession, startedAt: number): Promise<TailJob | undefined> {
  const { log, timers } = deps;
  const plan = job.plan;
  if (!job.announce) {
    log.info('announcements disabled for this attachment: sending nothing');
    return undefined;
  }
  if (plan.schedule.length === 0) return undefined;
  const targets = announceable(plan.interfaces, session.interfaces, log);
  if (targets.length === 0) return undefined;
  const outcome = await waitReady(session, targets, { timeoutMs: Math.min(job.addWaitMs, job.readyTimeoutMs), timers });
  const base = {
    network: job.network,
    containerId: job.containerId,
    ifname: job.ifname,
    netns: job.netns,
    netnsId: job.netnsId,
    interfaces: targets.map((t) => ({ name: t.name, ipv4: [...t.ipv4], ipv6: [...t.ipv6] })),
    hostPeerNames: plan.hostPeerNames,
    arpOps: plan.arpOps,
    schedule: plan.schedule,
    readyDeadline: startedAt + job.readyTimeoutMs,
    logFile: job.logFile,
    logLevel: job.logLevel,
  };
  switch (outcome.kind) {
    case 'cancelled':
      return undefined; // ADD sets no cancel condition
    case 'gone':
      throw new CniError(ErrorCode.InterfaceNotFound, `pod interface "${outcome.name}" disappeared from ${job.netns}`);
    case 'ready': {
      const sent = sendRound(session.pod.packet, outcome.inputs, plan.arpOps, session.pod.ipv6Forwarding, log);
      log.info('announced', { round: 1, of: plan.schedule.length, frames: totalFrames(sent) });
      return plan.schedule.length > 1 ? { ...base, firstRoundAt: timers.bootMs() } : undefined;
    }
    case 'timeout':
      if (job.readyTimeoutMs <= job.addWaitMs) {
        log.warn('pod not ready in time: not announcing', { waitedMs: job.readyTimeoutMs, waitingFor: outcome.reasons });
        return undefined;
      }
      log.info('pod not ready yet: announcing from the background once it is', { waitedMs: job.addWaitMs, waitingFor: outcome.reasons });
      return base;
  }
}

/** Interfaces worth waiting for: those with addresses, on links where L2 neighbours exist. */
function announceable(
  plans: readonly InterfacePlan[],
  resolved: readonly ResolvedInterface[],
  log: Logger,
): (InterfacePlan & { iface: ResolvedInterface })[] {
  return plans.flatMap((p) => {
    const iface = resolved.find((r) => r.name === p.name)!;
    if (iface.ipvlanMode === 'l3' || iface.ipvlanMode === 'l3s') {
      log.info('ipvlan in L3 mode has no L2 neighbours to update: sending nothing', { interface: p.name, mode: iface.ipvlanMode });
      return [];
    }
    if (p.ipv4.length + p.ipv6.length === 0) {
      log.debug('no addresses to announce', { interface: p.name });
      return [];
    }
    return [{ ...p, iface }];
  });
}
