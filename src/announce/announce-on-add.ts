// ADD: find the pod interfaces, optionally set IP-derived MACs, wait (bounded)
// until the pod can be heard, send round 1, and hand the rest to the node's
// background announcer (src/daemon) through the attachment's record.
import type { Logger } from '../log';
import type { AnnouncePlan, InterfacePlan } from '../plan';
import type { Libc } from '../sys/libc';
import { formatMac } from '../wire/mac';
import type { ResolvedInterface } from './pod-interface';
import { buildRound, NO_FRAMES, sendFrames, totalFrames, type FrameCounts } from './round';
import type { FrameBudget } from './frame-budget';
import type { Request } from '../daemon/protocol';
import type { Asked } from '../daemon/client';
import { basename } from '../path';
import { openSession, waitReady, type PodSession, type SocketOpener } from './session';
import { ensurePrivateDir } from '../sys/private-dir';
import { unlinkIfPresent } from '../sys/safe-file';
import { LOCK_GRACE_MS, lockPath, lockWaitMs, releaseAttachmentLock, type LockFile } from './attachment-lock';
import { readRecordToActOn, recordPath, removeRecordQuietly, stateDirProblem, writeRecord, type AttachmentRecord } from './state';
import type { AttachmentIds, BackgroundJob } from './background-job';
import { checkConflictsOnAdd } from './add-probe';
import { dropConflicting } from './conflict-probe';
import { restoreRecordedMacs } from './undo-macs';
import type { Timers } from './timers';
import { AddressConflictError, AttachmentBusyError, InterfaceMissingError, StateError } from './errors';

/** What ADD needs from the outside world. */
export interface AddDeps {
  libc: Libc;
  open: SocketOpener;
  timers: Timers;
  log: Logger;
  /** Asks the background announcer of `stateDir` (see daemon/client.ts), starting it when none answers with `start`, handing it copies of `fds`. */
  askDaemon(stateDir: string, request: Request, opts: { start: boolean; fds?: readonly number[] }): Promise<Asked>;
  /** The node-wide frame budget that round 1 draws from. */
  budget: FrameBudget;
  /** Takes a lock file within a timeout (flock, see sys/file-lock.ts); undefined when it stays held. */
  lockFile: LockFile;
  /** Closes `fds` without making this process's exit wait for them (see sys/close-after-exit.ts). */
  closeAfterExit(fds: readonly number[]): void;
}

/** The fields of an ADD that its background job carries as they are (conflictCheck absent: no probe before round 1). */
type SharedWithJob = keyof AttachmentIds | 'logFile' | 'logLevel' | 'metricsFile' | 'rateLimit' | 'conflictCheck';

/** One attachment's ADD. */
export interface AddJob extends Pick<BackgroundJob, SharedWithJob> {
  stateDir: string;
  plan: AnnouncePlan;
  /** False when the attachment opted out: MACs are still applied, nothing is sent. */
  announce: boolean;
  addWaitMs: number;
  readyTimeoutMs: number;
  /** Handed to the background announcer with every request, and with the job. */
  idleExitMs: number;
}

/** Runs ADD's announcement under the attachment's lock (AttachmentBusyError past lockWaitMs) in a private stateDir; returns the MACs it set, by prevResult index. */
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
    releaseAttachmentLock(lock, file);
  }
}

async function addLocked(deps: AddDeps, job: AddJob, file: string): Promise<Map<number, string>> {
  const { log, timers } = deps;
  const startedAt = timers.bootMs();
  const lockedAt = timers.now();
  // A repeated ADD takes over the attachment; it keeps the MACs it must restore.
  const previous = readRecordToActOn(file, log);
  // MACs recorded in another netns (the path now names a new pod) are not this pod's to restore.
  const sameNetns = previous !== undefined && previous.netnsId.dev === job.netnsId.dev && previous.netnsId.ino === job.netnsId.ino;
  if (previous && !sameNetns && previous.originalMacs.length > 0) {
    log.info('the previous record was for another netns: not keeping its original MACs', { netns: previous.netns });
  }
  const { network, containerId, ifname, netns, netnsId } = job;
  const record: AttachmentRecord = { network, containerId, ifname, netns, netnsId, originalMacs: sameNetns ? previous.originalMacs : [] };
  const plan = job.plan;
  const name = basename(file);
  // ADD's packet socket goes to the background announcer with ADD's last
  // message, which closes it on another thread (closing it here would make
  // ADD wait for an RCU grace period); without an announcer, to a holder.
  // The conflict probe's receiving packet sockets (add-probe.ts) go the same way.
  const packetFds: number[] = [];
  // Every request carries the announcer's settings: one started here may get no job to read them from.
  const settings = { idleExitMs: job.idleExitMs, metricsFile: job.metricsFile };
  // Round 1 is out and the record written: failing to reach or start the announcer must not fail ADD.
  const tell = async (request: Extract<Request, { op: 'sync' | 'count' }>, start: boolean): Promise<Asked | undefined> => {
    let asked: Asked;
    try {
      asked = await deps.askDaemon(job.stateDir, { ...request, settings }, { start, fds: packetFds });
    } catch (err) {
      log.warn('cannot reach or start the background announcer: it takes the work from the record when it starts', { error: err });
      return undefined;
    }
    if (asked.sent) {
      for (const fd of packetFds.splice(0)) deps.libc.close(fd); // the announcer has its own copy: not the last close
    }
    return asked;
  };
  try {
    let first: FirstRound;
    let macs: Map<number, string>;
    try {
      const session = openSession(deps, job.netns, plan.interfaces.map((i) => i.name), plan.hostPeerNames);
      try {
        if (session.missing.length > 0) throw new InterfaceMissingError(session.missing, job.netns);
        macs = applyTargetMacs(session, plan.interfaces, record, job.stateDir, log);
        try {
          first = await firstRound(deps, job, session, { startedAt, lockedAt }, packetFds);
        } catch (err) {
          // An address conflict under conflictCheck fail: nothing was announced, so the pod keeps its own MAC.
          if (err instanceof AddressConflictError) restoreRecordedMacs(session, record, log);
          throw err;
        }
      } finally {
        packetFds.push(session.pod.packet.release());
        session.close();
      }
      if (first.later) record.job = first.later;
      if (record.job || record.originalMacs.length > 0) persist(job.stateDir, record);
      else if (previous) unpersist(file);
    } catch (err) {
      if (record.originalMacs.length > 0) writeRecordQuietly(job.stateDir, record, log);
      else removeRecordQuietly(file, log);
      // The record no longer holds the previous ADD's job: a running announcer drops it.
      if (previous?.job) await tell({ op: 'sync', record: name, sent: NO_FRAMES }, false);
      throw err;
    }
    if (record.job) {
      const asked = await tell({ op: 'sync', record: name, sent: first.sent, conflicts: first.conflicts }, true);
      if (!asked) return macs;
      if (asked.started) log.debug('started the background announcer: it takes the job from the record', { record: name });
      else if (asked.reply?.ok) log.debug('background announcer has the job', { rounds: record.job.schedule.length });
      else log.warn('background announcer did not answer in time: it takes the job from the record when it starts', { record: name });
    } else {
      const counts = { sent: first.sent, conflicts: first.conflicts };
      // Nothing left for the background: tell one that runs (it takes the packet socket), start none.
      await tell(previous?.job ? { op: 'sync', record: name, ...counts } : { op: 'count', ...counts }, false);
    }
    return macs;
  } finally {
    if (packetFds.length > 0) deps.closeAfterExit(packetFds);
  }
}

function writeRecordQuietly(stateDir: string, record: AttachmentRecord, log: Logger): void {
  try {
    writeRecord(stateDir, record);
  } catch (err) {
    log.error('cannot record the original MACs', { error: err });
  }
}

function persist(stateDir: string, record: AttachmentRecord): void {
  try {
    writeRecord(stateDir, record);
  } catch (err) {
    throw new StateError(`cannot write state in ${stateDir}: ${(err as Error).message}`, { cause: err });
  }
}

/** Removes the attachment's record; a StateError carrying the errno when it cannot. */
function unpersist(file: string): void {
  try {
    unlinkIfPresent(file);
  } catch (err) {
    throw new StateError(`cannot remove the state record ${file}: ${(err as Error).message}`, { cause: err });
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

/** What round 1 did: the frames it sent, the addresses its probe left out, and the job left for the background announcer. */
interface FirstRound {
  sent: FrameCounts;
  conflicts?: number;
  later?: BackgroundJob;
}

/** Sends round 1 if the pod gets ready within addWaitMs, probed first under conflictCheck (its sockets go to `probeFds`); returns what is left for the background. */
async function firstRound(
  deps: AddDeps,
  job: AddJob,
  session: PodSession,
  { startedAt, lockedAt }: { startedAt: number; lockedAt: number },
  probeFds: number[],
): Promise<FirstRound> {
  const { log, timers } = deps;
  // `shared`: the fields the background job carries as they are.
  const { stateDir, plan, announce, addWaitMs, readyTimeoutMs, ...shared } = job;
  const nothing: FirstRound = { sent: NO_FRAMES };
  if (!announce) {
    log.info('announcements disabled for this attachment: sending nothing');
    return nothing;
  }
  if (plan.schedule.length === 0) return nothing;
  const targets = announceable(plan.interfaces, session.interfaces, log);
  if (targets.length === 0) return nothing;
  const timeoutMs = Math.min(addWaitMs, readyTimeoutMs);
  const onWait = (reasons: readonly string[]): void => log.debug('pod not ready: waiting for it', { upToMs: timeoutMs, waitingFor: reasons });
  const outcome = await waitReady(session, targets, { timeoutMs, timers, onWait });
  const base: BackgroundJob = {
    ...shared,
    interfaces: targets.map((t) => ({ name: t.name, ipv4: [...t.ipv4], ipv6: [...t.ipv6] })),
    hostPeerNames: plan.hostPeerNames,
    arpOps: plan.arpOps,
    schedule: plan.schedule,
    readyDeadline: startedAt + readyTimeoutMs,
  };
  switch (outcome.kind) {
    case 'gone':
      throw new InterfaceMissingError([outcome.name], job.netns, true);
    case 'ready': {
      const round = buildRound(outcome.inputs, plan.arpOps, session.pod.ipv6Forwarding, log);
      const probeDeps = { libc: deps.libc, open: deps.open, timers, log, handOff: (fds: readonly number[]) => void probeFds.push(...fds) };
      const { frames, conflicts } = job.conflictCheck
        ? checkConflictsOnAdd(probeDeps, session, job.netns, round, job.conflictCheck)
        : { frames: round, conflicts: [] };
      // The wait for tokens counts from readiness, but ends (round 1 goes on credit) well before a
      // command waiting for this attachment's lock would give up on it.
      const deadline = Math.min(timers.now() + addWaitMs, lockedAt + lockWaitMs(addWaitMs) - LOCK_GRACE_MS / 2);
      const sent = await sendWithinBudget(deps, frames.length, deadline, () => sendFrames(session.pod.packet, frames, log));
      log.info('announced', { round: 1, of: plan.schedule.length, frames: totalFrames(sent) });
      // Later rounds leave out what the probe found in use, too.
      const interfaces = dropConflicting(base.interfaces, conflicts);
      const more = plan.schedule.length > 1 && interfaces.some((i) => i.ipv4.length + i.ipv6.length > 0);
      const found = conflicts.length;
      return more ? { sent, conflicts: found, later: { ...base, interfaces, conflicts: found, firstRoundAt: timers.bootMs() } } : { sent, conflicts: found };
    }
    case 'timeout':
      if (readyTimeoutMs <= addWaitMs) {
        log.warn('pod not ready in time: not announcing', { waitedMs: readyTimeoutMs, waitingFor: outcome.reasons });
        return nothing;
      }
      log.info('pod not ready yet: announcing from the background once it is', { waitedMs: addWaitMs, waitingFor: outcome.reasons });
      return { sent: NO_FRAMES, later: base };
  }
}

/** Round 1 is never dropped: it waits for the node-wide budget until `deadline` (monotonic ms), then goes on credit. */
async function sendWithinBudget(deps: AddDeps, frames: number, deadline: number, send: () => FrameCounts): Promise<FrameCounts> {
  let sent: FrameCounts = NO_FRAMES;
  let waited = false;
  for (;;) {
    const now = deps.timers.now();
    const taken = await deps.budget.take(frames, () => deps.timers.bootMs(), now >= deadline, () => (sent = send()));
    if (taken.ok) return sent;
    if (!waited) deps.log.info('node-wide rate limit: round 1 waits its turn', { waitMs: taken.waitMs });
    waited = true;
    await deps.timers.sleep(Math.min(taken.waitMs, Math.max(0, deadline - now)));
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
