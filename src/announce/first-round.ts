// Round 1 of ADD: wait (bounded, through the injected waits) until the pod can
// be heard, probe for conflicts under conflictCheck, send within the node-wide
// budget, and say what is left for the background announcer.
import type { Logger } from '../log';
import type { InterfacePlan } from '../plan';
import type { AddDeps, AddJob } from './announce-on-add';
import { checkConflictsOnAdd } from './add-probe';
import { LOCK_GRACE_MS } from './attachment-lock';
import type { BackgroundJob } from './background-job';
import { dropConflicting } from './conflict-probe';
import { InterfaceMissingError } from './errors';
import type { ResolvedInterface } from './pod-interface';
import type { RoundInput } from './readiness';
import { buildRound, NO_FRAMES, sendFrames, totalFrames, type FrameCounts } from './round';
import { sendWithinBudget } from './budget-wait';
import { gatewayOnAdd } from './gateway-on-add';
import { withPodRoutes } from './pod-routes';
import { AF_INET, AF_INET6, type RouteEntry } from '../wire/rtnetlink';
import type { GatewayVerdict } from './gateway-verdict';
import { waitReady, type PodSession } from './session';
import { requireWanted } from './wanted';

/**
 * What round 1 did: the frames it sent, the addresses its probe left out, and the job left for the background
 * announcer.
 */
export interface FirstRound {
  sent: FrameCounts;
  conflicts?: number;
  later?: BackgroundJob;
  /** What the gateway check found, when it runs (absent: round 1 did not go out). */
  gateway?: GatewayVerdict;
}

/** When ADD started (boot ms, the clock of the job) and took the lock (monotonic ms). */
export interface AddClock {
  startedAt: number;
  lockedAt: number;
}

const NOTHING: FirstRound = { sent: NO_FRAMES };

/**
 * Sends round 1 if the pod gets ready within addWaitMs, probed first under conflictCheck; returns what is left for the
 * background.
 */
export async function firstRound(
  deps: AddDeps,
  added: AddJob,
  session: PodSession,
  clock: AddClock,
): Promise<FirstRound> {
  const { log, timers } = deps;
  // `shared`: the fields the background job carries as they are.
  const { stateDir, plan, announce, addWaitMs, readyTimeoutMs, gatewayCheck: _, ...shared } = added;
  if (!announce) {
    log.info('announcements disabled for this attachment: sending nothing');
    return NOTHING;
  }
  if (plan.schedule.length === 0) return NOTHING;
  const targets = announceable(plan.interfaces, session.interfaces, log);
  if (targets.length === 0) return NOTHING;
  const routed = targets.map((t) => ({ name: t.name, index: t.iface.index, ipv4: t.ipv4, ipv6: t.ipv6 }));
  const job = { ...added, gatewayCheck: withPodRoutes(added.gatewayCheck, podRoutes(session, added), routed) };
  const timeoutMs = Math.min(addWaitMs, readyTimeoutMs);
  const onWait = (reasons: readonly string[]): void =>
    log.debug('pod not ready: waiting for it', { upToMs: timeoutMs, waitingFor: reasons });
  const outcome = await waitReady(session, targets, { timeoutMs, timers, waits: deps.waits, onWait });
  const base: BackgroundJob = {
    ...shared,
    interfaces: targets.map((t) => ({ name: t.name, ipv4: [...t.ipv4], ipv6: [...t.ipv6] })),
    hostPeerNames: plan.hostPeerNames,
    arpOps: plan.arpOps,
    schedule: plan.schedule,
    readyDeadline: clock.startedAt + readyTimeoutMs,
    ...asksLater(job),
  };
  switch (outcome.kind) {
    case 'gone':
      throw new InterfaceMissingError([outcome.name], job.netns, true);
    case 'ready':
      return sendReady(deps, job, session, outcome.inputs, base, clock.lockedAt);
    case 'timeout':
      if (readyTimeoutMs <= addWaitMs) {
        log.warn('pod not ready in time: not announcing', { waitedMs: readyTimeoutMs, waitingFor: outcome.reasons });
        return NOTHING;
      }
      log.info('pod not ready yet: announcing from the background once it is', {
        waitedMs: addWaitMs,
        waitingFor: outcome.reasons,
      });
      if (job.gatewayCheck.mode === 'require' && base.gatewayCheck)
        log.warn('gatewayCheck require acts as report: the pod was not ready within addWaitMs', { addWaitMs });
      return { sent: NO_FRAMES, later: base };
  }
}

/**
 * The pod is ready: probes (conflictCheck), sends round 1, and leaves the later rounds (without conflicting addresses)
 * as `base`'s job.
 */
async function sendReady(
  deps: AddDeps,
  job: AddJob,
  session: PodSession,
  inputs: RoundInput[],
  base: BackgroundJob,
  lockedAt: number,
): Promise<FirstRound> {
  const { log, timers } = deps;
  const { plan, addWaitMs } = job;
  const round = buildRound(inputs, plan.arpOps, session.pod.ipv6Forwarding, log);
  if (job.conflictCheck) requireWanted(deps, 'the conflict probe');
  const { frames, conflicts } = job.conflictCheck
    ? await checkConflictsOnAdd(deps, session, job.netns, round, job.conflictCheck)
    : { frames: round, conflicts: [] };
  // The wait for tokens counts from readiness, but ends (round 1 goes on credit) well before a
  // command waiting for this attachment's lock would give up on it.
  const deadline = Math.min(timers.now() + addWaitMs, lockedAt + addWaitMs + LOCK_GRACE_MS / 2);
  const sent = await sendWithinBudget(
    deps,
    frames.length,
    deadline,
    () => {
      requireWanted(deps, 'round 1');
      return sendFrames(session.pod.packet, frames, log);
    },
    'round 1',
  );
  const firstRoundAt = timers.bootMs();
  log.info('announced', {
    round: 1,
    of: plan.schedule.length,
    frames: totalFrames(sent),
    ips: base.interfaces.flatMap((i) => [...i.ipv4, ...i.ipv6]),
  });
  const after = { session, netns: job.netns, inputs, conflicts, firstRoundAt };
  const gateway = await gatewayOnAdd(deps, job.gatewayCheck, after);
  // Later rounds leave out what the probe found in use, too.
  const interfaces = dropConflicting(base.interfaces, conflicts);
  // A check with a routed gateway leaves a job: its asks and the node-local proof after round 1 run in the announcer.
  const more =
    (plan.schedule.length > 1 && interfaces.some((i) => i.ipv4.length + i.ipv6.length > 0)) ||
    base.gatewayCheck !== undefined;
  const later = { ...base, interfaces, conflicts: conflicts.length, firstRoundAt };
  return more ? { sent, conflicts: conflicts.length, later, gateway } : { sent, conflicts: conflicts.length, gateway };
}

/** The pod's routes of both families, for the check (none read when it is off). */
function podRoutes(session: PodSession, job: AddJob): RouteEntry[] {
  if (job.gatewayCheck.mode === 'off') return [];
  return [...session.pod.rtnl.routes(AF_INET), ...session.pod.rtnl.routes(AF_INET6)];
}

/** The check a background job carries on: none when it is off or nothing is routed (then there is nothing to prove). */
function asksLater(job: AddJob): Pick<BackgroundJob, 'gatewayCheck'> {
  const { mode, windowMs, gateways } = job.gatewayCheck;
  return mode === 'off' || gateways.length === 0 ? {} : { gatewayCheck: { windowMs, gateways } };
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
      log.info('ipvlan in L3 mode has no L2 neighbours to update: sending nothing', {
        interface: p.name,
        mode: iface.ipvlanMode,
      });
      return [];
    }
    if (p.ipv4.length + p.ipv6.length === 0) {
      log.debug('no addresses to announce', { interface: p.name });
      return [];
    }
    return [{ ...p, iface }];
  });
}
