// The background tail: the rounds after the first, or the whole burst when
// the pod was not ready during ADD. It holds no pod socket between rounds
// (each round re-opens the netns by path), so it never keeps a pod's netns
// alive, and it exits within NETNS_CHECK_MS once the netns path is gone or
// replaced, whether it sleeps between rounds or waits for readiness.
import type { Logger } from '../log';
import type { Libc } from '../sys/libc';
import { netnsIdAt, type NetnsId } from '../sys/netns';
import type { ResolvedInterface } from './pod-interface';
import { sendRound, totalFrames } from './round';
import { openSession, waitReady, type PodSession } from './session';
import type { TailJob } from './tail-job';
import type { Timers } from './timers';

/** How often the tail checks that the pod's netns is still there, at the latest. */
export const NETNS_CHECK_MS = 500;

/** What the tail needs from the outside world. */
export interface TailDeps {
  libc: Libc;
  timers: Timers;
  log: Logger;
  /** Whether the attachment's record still names this tail (see await-job.ts); checked with the netns. */
  stillWanted(): boolean;
}

/** Runs the tail to completion; resolves when it is done or the pod is gone. */
export async function runTail(deps: TailDeps, job: TailJob): Promise<void> {
  const { log, timers } = deps;
  // Deleted (DEL, GC), taken over by a repeated ADD, or the pod's netns is gone: stop.
  const alive = (): boolean => sameNetns(netnsIdAt(job.netns), job.netnsId) && deps.stillWanted();
  let firstRoundAt = job.firstRoundAt;
  let done = firstRoundAt === undefined ? 0 : 1;
  if (firstRoundAt === undefined) {
    const sent = await awaitReadyAndSend(deps, job, alive);
    if (!sent) return;
    firstRoundAt = timers.bootMs();
    done = 1;
  }
  for (let round = done; round < job.schedule.length; round++) {
    const due = firstRoundAt + job.schedule[round]!;
    if (!(await sleepWhileAlive(timers, due, alive))) {
      log.info('pod netns gone or attachment deleted: stopping announcements', { round: round + 1 });
      return;
    }
    const result = await oneRound(deps, job, alive);
    if (result === 'gone') {
      log.info('pod interface gone: stopping announcements', { round: round + 1 });
      return;
    }
    log.info('announced', { round: round + 1, of: job.schedule.length, frames: result });
  }
}

/** Deferred start: waits (events, bounded by readyDeadline) for readiness, then sends round 1. */
async function awaitReadyAndSend(deps: TailDeps, job: TailJob, alive: () => boolean): Promise<boolean> {
  const { log, timers } = deps;
  if (!alive()) return false;
  const session = openSession(deps.libc, job.netns, job.interfaces.map((i) => i.name), job.hostPeerNames);
  try {
    const targets = withResolved(job, session.interfaces);
    if (!targets) return false;
    // This wait holds the pod's sockets (and so its netns): look at the netns path between events too.
    const outcome = await waitReady(session, targets, {
      timeoutMs: job.readyDeadline - timers.bootMs(),
      timers,
      cancelled: () => !alive(),
      checkEveryMs: NETNS_CHECK_MS,
    });
    if (outcome.kind === 'cancelled') return false;
    if (outcome.kind !== 'ready') {
      log.warn('pod never became ready: not announcing', outcome.kind === 'timeout' ? { waitingFor: outcome.reasons } : { gone: outcome.name });
      return false;
    }
    const sent = sendRound(session.pod.packet, outcome.inputs, job.arpOps, session.pod.ipv6Forwarding, log);
    log.info('announced', { round: 1, of: job.schedule.length, frames: totalFrames(sent), deferred: true });
    return true;
  } finally {
    session.close();
  }
}

/** One later round: re-open the pod by path, re-read MACs and addresses, send what is really there. */
async function oneRound(deps: TailDeps, job: TailJob, alive: () => boolean): Promise<number | 'gone'> {
  if (!alive()) return 'gone';
  let session: PodSession;
  try {
    session = openSession(deps.libc, job.netns, job.interfaces.map((i) => i.name), job.hostPeerNames);
  } catch (err) {
    deps.log.info('cannot enter pod netns', { error: err });
    return 'gone';
  }
  try {
    const targets = withResolved(job, session.interfaces);
    if (!targets) return 'gone';
    const outcome = await waitReady(session, targets, { timeoutMs: 0, timers: deps.timers });
    if (outcome.kind === 'gone' || outcome.kind === 'cancelled') return 'gone';
    if (outcome.kind === 'timeout') {
      deps.log.info('pod not ready for this round: skipping it', { waitingFor: outcome.reasons });
      return 0;
    }
    return totalFrames(sendRound(session.pod.packet, outcome.inputs, job.arpOps, session.pod.ipv6Forwarding, deps.log));
  } finally {
    session.close();
  }
}

function withResolved(job: TailJob, resolved: readonly ResolvedInterface[]) {
  const targets = job.interfaces.map((t) => ({ ...t, iface: resolved.find((r) => r.name === t.name) }));
  return targets.every((t) => t.iface) ? (targets as (typeof targets[number] & { iface: ResolvedInterface })[]) : undefined;
}

/** Sleeps until `due` (epoch ms) in short slices; false as soon as the netns is gone. */
async function sleepWhileAlive(timers: Timers, due: number, alive: () => boolean): Promise<boolean> {
  for (;;) {
    if (!alive()) return false;
    const left = due - timers.bootMs();
    if (left <= 0) return true;
    await timers.sleep(Math.min(left, NETNS_CHECK_MS));
  }
}

function sameNetns(a: NetnsId | undefined, b: NetnsId): boolean {
  return a !== undefined && a.dev === b.dev && a.ino === b.ino;
}

