// Round 1 of ADD: wait (bounded, through the command's waits) until the pod can be heard, probe for conflicts under
// conflictCheck (one probe window, stepped between awaited waits so that ADD never blocks the process that runs it),
// send within the node-wide budget (round 1 and the gateway check's requests are never dropped: they wait for tokens
// until a deadline, then go on credit), and the gateway check's part right after it: `off` and an attachment without
// a routed gateway are final at once; `report` leaves the asks to the announcer (ADD does not wait); `require` asks
// here, waits up to gatewayCheckMs for every routed gateway, and fails ADD without an answer. Then it says what is
// left for the table of work.
import type { Logger } from '../log';
import type { InterfacePlan } from '../plan';
import type { AddJob, AttachmentCommand } from './add';
import { LOCK_GRACE_MS, requireWanted } from './context';
import type { BackgroundJob } from './background-job';
import { dropConflicting } from './conflict-probe';
import { InterfaceMissingError } from './errors';
import type { ResolvedInterface } from './pod-interface';
import type { RoundInput } from './readiness';
import { buildRound, NO_FRAMES, sendFrames, totalFrames, type FrameCounts } from './round';
import { withPodRoutes } from './pod-routes';
import { AF_INET, AF_INET6, type RouteEntry } from '../wire/rtnetlink';
import type { GatewayVerdict } from './gateway-verdict';
import { waitReady, type PodSession } from './session';

import { describeConflict, withoutConflicts, type AddressConflict, type ProbeSettings } from './conflict-probe';
import { AddressConflictError, GatewayUnansweredError, NotWantedError } from './errors';
import { SteppedPodProbe } from './probe-pod';
import type { OutgoingFrame } from './round';
import type { ConflictCheckJob } from './background-job';
import { askFds, askReplies, gatewayTargets, openAsk, readAsk, releaseAsk, sendAsk } from './gateway-ask';
import type { GatewayCheckMode } from './gateway-check';
import { afterWindow, firstVerdict, OFF_VERDICT, type RoutedGateway } from './gateway-verdict';

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
  deps: AttachmentCommand,
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
  deps: AttachmentCommand,
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
function asksLater(job: AddJob): { gatewayCheck?: BackgroundJob['gatewayCheck'] } {
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

/** What the check leaves to send, and the addresses it left out. */
export interface CheckedRound {
  frames: OutgoingFrame[];
  conflicts: AddressConflict[];
}

/**
 * Probes the IPv4 addresses of round 1 (`frames`) before they are announced.
 * - fail: the first conflict ends the window and fails ADD (AddressConflictError,
 *   naming the address, the other host's MAC and the interface). Nothing is sent.
 * - warn: each conflicting address is logged and left out; the rest is sent.
 * A probe that cannot run fails ADD under fail (with its own error) and is
 * logged under warn, where the round goes out unprobed.
 */
export async function checkConflictsOnAdd(
  deps: AttachmentCommand,
  session: PodSession,
  netns: string,
  frames: readonly OutgoingFrame[],
  check: ConflictCheckJob,
): Promise<CheckedRound> {
  let conflicts: AddressConflict[];
  try {
    conflicts = await probeWindow(deps, session, netns, frames, check, check.action === 'fail');
  } catch (err) {
    // A command stopped in the probe's wait goes no further.
    if (check.action === 'fail' || err instanceof NotWantedError) throw err;
    deps.log.error('conflict probe failed: announcing without it', { error: err });
    return { frames: [...frames], conflicts: [] };
  }
  if (conflicts.length === 0) return { frames: [...frames], conflicts };
  if (check.action === 'fail') throw new AddressConflictError(conflicts);
  for (const c of conflicts) {
    deps.log.warn(`address conflict: not announcing ${describeConflict(c)}`, {
      address: c.address,
      mac: c.mac,
      interface: c.interface,
    });
  }
  return { frames: withoutConflicts(frames, conflicts), conflicts };
}

/**
 * Steps one window to its end, waiting on its receivers (or for its next probe) between steps; the receivers are
 * released whatever happens.
 */
async function probeWindow(
  deps: AttachmentCommand,
  session: PodSession,
  netns: string,
  frames: readonly OutgoingFrame[],
  settings: ProbeSettings,
  stopAtFirst: boolean,
): Promise<AddressConflict[]> {
  const probe = SteppedPodProbe.start(deps, session, netns, frames, settings, deps.timers.now(), stopAtFirst);
  if (!probe) return [];
  try {
    for (;;) {
      const now = deps.timers.now();
      if (probe.step(now)) return probe.finish();
      await deps.waits.readable(probe.fds(), probe.wakeAt(now) - now);
    }
  } finally {
    probe.close();
  }
}

/** How an ADD checks its gateways: the mode, the window of one ask, and the routed gateways of its interfaces. */
export interface AddGatewayCheck {
  mode: GatewayCheckMode;
  windowMs: number;
  gateways: RoutedGateway[];
}

/** Where ADD's check starts: after round 1 went out at `firstRoundAt` (boot ms) from `inputs`. */
export interface AfterRoundOne {
  session: PodSession;
  netns: string;
  inputs: readonly RoundInput[];
  conflicts: readonly AddressConflict[];
  firstRoundAt: number;
}

/**
 * The check after round 1: its verdict (`pending` under report: the announcer asks at once). Under require, a gateway
 * that does not answer within the window fails ADD (GatewayUnansweredError).
 */
export async function gatewayOnAdd(
  deps: AttachmentCommand,
  check: AddGatewayCheck,
  after: AfterRoundOne,
): Promise<GatewayVerdict> {
  if (check.mode === 'off') return OFF_VERDICT;
  const verdict = firstVerdict(check.gateways);
  if (verdict.result !== 'pending' || check.mode === 'report') return verdict;
  const inputs = inputsWithout(after.inputs, after.conflicts);
  requireWanted(deps, 'the gateway check');
  const startedAt = deps.timers.bootMs();
  const ask = openAsk(deps.open, after.netns, gatewayTargets(inputs, check.gateways), check.windowMs, startedAt);
  if (!ask) throw new GatewayUnansweredError(verdict.unanswered, 'no pod address could ask it');
  let checked: GatewayVerdict;
  try {
    const deadline = deps.timers.now() + check.windowMs;
    const sent = await sendWithinBudget(
      deps,
      ask.requests.length,
      deadline,
      () => sendAsk(after.session.pod.packet, ask, deps.log),
      'the gateway check',
    );
    for (;;) {
      const now = deps.timers.bootMs();
      readAsk(deps.libc, ask, now);
      if (ask.window.finished(now)) break;
      await deps.waits.readable(askFds(ask), ask.window.waitMs(now));
    }
    checked = afterWindow(verdict, askReplies(ask, after.firstRoundAt), true);
    if (checked.result !== 'answered') {
      const what = `${sent} requests sent, no answer within ${check.windowMs} ms`;
      throw new GatewayUnansweredError(checked.unanswered, what);
    }
  } finally {
    for (const fd of releaseAsk(ask)) deps.closeInBackground(fd);
  }
  return checked;
}

/** `inputs` without the IPv4 addresses the conflict probe left out: they never ask. */
function inputsWithout(inputs: readonly RoundInput[], conflicts: readonly AddressConflict[]): RoundInput[] {
  return inputs.map((input) => ({
    ...input,
    ipv4: input.ipv4.filter((ip) => !conflicts.some((c) => c.interface === input.name && c.address === ip.join('.'))),
  }));
}

/**
 * Sends `frames` frames through `send` once the node-wide budget has them, waiting until `deadline` (monotonic ms) at
 * the latest, then on credit: what ADD sends is never dropped. `what` names it in the log.
 */
export async function sendWithinBudget<T>(
  deps: AttachmentCommand,
  frames: number,
  deadline: number,
  send: () => T,
  what: string,
): Promise<T> {
  let waited = false;
  for (;;) {
    const now = deps.timers.now();
    const taken = deps.frameBudget.take(frames, deps.timers.bootMs(), now >= deadline);
    if (taken.ok) return send();
    if (!waited) deps.log.info(`node-wide rate limit: ${what} waits its turn`, { waitMs: taken.waitMs });
    waited = true;
    await deps.timers.sleep(Math.min(taken.waitMs, Math.max(0, deadline - now)));
  }
}
