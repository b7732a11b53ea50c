// Round 1 of ADD: wait (bounded, through the command's waits) until the pod can be heard, probe for conflicts under
// conflictCheck (one probe window, stepped between awaited waits so that ADD never blocks the process that runs it),
// send within the node-wide budget (round 1 and the gateway check's requests are never dropped: they wait for tokens
// until a deadline, then go on credit), and the gateway check's part right after it: `off` and an attachment without
// a routed gateway are final at once; `report` leaves the asks to the announcer (ADD does not wait); `require` asks
// here, waits up to gatewayCheckMs for every routed gateway, and fails ADD without an answer. Then it says what is
// left for the table of work.
import type { Logger } from '../log';
import type { InterfacePlan } from '../plan';
import { canonicalIP, formatIPv6 } from '../wire/ip';
import { AF_INET, AF_INET6 } from '../wire/rtnetlink';
import type { Rtnl } from '../sys/rtnl';
import type { AddJob, AttachmentCommand } from './add';
import type { BackgroundJob, ConflictCheckJob, GatewayCheckJob } from './background-job';
import { dropConflicting, leaveOutConflicts, SteppedPodProbe, type AddressConflict } from './conflict-probe';
import { LOCK_GRACE_MS, requireWanted, type FirstRoundReport } from './context';
import { AddressConflictError, GatewayUnansweredError, InterfaceMissingError, NotWantedError } from './errors';
import { askFds, askReplies, gatewayTargets, openAsk, readAsk, releaseAsk, sendAsk } from './gateway-ask';
import { afterWindow, firstVerdict, OFF_VERDICT, type GatewayVerdict } from './gateway-verdict';
import { buildRound, NO_FRAMES, sendFrames, totalFrames, type OutgoingFrame } from './round';
import { waitReady, type PodSession, type PodTarget, type ResolvedInterface, type RoundInput } from './session';

/** What round 1 did (the report the table counts), and the job left for the background announcer. */
export interface FirstRound extends FirstRoundReport {
  later?: BackgroundJob;
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
  const { stateDir, plan, announce, addWaitMs, readyTimeoutMs, gatewayCheck, ...shared } = added;
  if (!announce) {
    log.info('announcements disabled for this attachment: sending nothing');
    return NOTHING;
  }
  if (plan.schedule.length === 0) return NOTHING;
  const targets = announceable(plan.interfaces, session.interfaces, log);
  if (targets.length === 0) return NOTHING;
  const job = { ...added, gatewayCheck: withPodRoutes(gatewayCheck, session.pod.rtnl, targets) };
  const { windowMs, gateways } = job.gatewayCheck;
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
    // The check a background job carries on: none when it is off or nothing is routed (nothing to prove then).
    ...(gatewayCheck.mode === 'off' || gateways.length === 0 ? {} : { gatewayCheck: { windowMs, gateways } }),
  };
  switch (outcome.kind) {
    case 'gone':
      throw new InterfaceMissingError([outcome.name], job.netns, true);
    case 'ready':
      return new RoundOne(deps, job, session).send(outcome.inputs, base, clock.lockedAt);
    case 'timeout':
      if (readyTimeoutMs <= addWaitMs) {
        log.warn('pod not ready in time: not announcing', { waitedMs: readyTimeoutMs, waitingFor: outcome.reasons });
        return NOTHING;
      }
      log.info('pod not ready yet: announcing from the background once it is', {
        waitedMs: addWaitMs,
        waitingFor: outcome.reasons,
      });
      if (gatewayCheck.mode === 'require' && base.gatewayCheck)
        log.warn('gatewayCheck require acts as report: the pod was not ready within addWaitMs', { addWaitMs });
      return { sent: NO_FRAMES, later: base };
  }
}

/** Interfaces worth waiting for: those with addresses, on links where L2 neighbours exist. */
function announceable(
  plans: readonly InterfacePlan[],
  resolved: readonly ResolvedInterface[],
  log: Logger,
): (InterfacePlan & PodTarget)[] {
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

/** How an ADD checks its gateways: the mode, the window of one ask, and the routed gateways of its interfaces. */
export interface AddGatewayCheck extends GatewayCheckJob {
  /** Nothing, ask and report, or ask and make ADD wait for (and fail without) an answer. */
  mode: 'off' | 'report' | 'require';
}

/**
 * `check` with the next hops in the pod's routing table (`pod`, both families) on each interface added (a route's
 * RTA_GATEWAY leaving through its RTA_OIF), in a family the interface announces, each gateway once; unchanged (the
 * table not read) when the check is off. prevResult's routes are what the main plugin said; the kernel's table is what
 * the pod really does, and a plugin may have added routes it did not report (a next hop per link).
 */
export function withPodRoutes(
  check: AddGatewayCheck,
  pod: Pick<Rtnl, 'routes'>,
  interfaces: readonly { name: string; iface: { index: number }; ipv4: readonly string[]; ipv6: readonly string[] }[],
): AddGatewayCheck {
  if (check.mode === 'off') return check;
  const gateways = [...check.gateways];
  for (const route of [...pod.routes(AF_INET), ...pod.routes(AF_INET6)]) {
    const iface = interfaces.find((i) => i.iface.index === route.oif);
    if (!iface || !route.gateway) continue;
    const v4 = route.gateway.length === 4;
    if ((v4 ? iface.ipv4 : iface.ipv6).length === 0) continue;
    const gateway = v4 ? route.gateway.join('.') : formatIPv6(route.gateway);
    const known = gateways.some((g) => g.interface === iface.name && canonicalIP(g.gateway) === gateway);
    if (!known) gateways.push({ interface: iface.name, gateway });
  }
  return { ...check, gateways };
}

/** Round 1 of one ADD, once its pod is ready: `job` carries the gateway check with the pod's routes. */
class RoundOne {
  constructor(
    private readonly deps: AttachmentCommand,
    private readonly job: AddJob,
    private readonly session: PodSession,
  ) {}

  /**
   * Probes (conflictCheck), sends round 1, and leaves the later rounds (without conflicting addresses) as `base`'s
   * job.
   */
  async send(inputs: RoundInput[], base: BackgroundJob, lockedAt: number): Promise<FirstRound> {
    const { deps, job, session } = this;
    const { log, timers } = deps;
    const { plan, addWaitMs } = job;
    const round = buildRound(inputs, plan.arpOps, session.pod.ipv6Forwarding, log);
    const { frames, conflicts } = job.conflictCheck
      ? await this.checkConflicts(round, job.conflictCheck)
      : { frames: round, conflicts: [] };
    // The wait for tokens counts from readiness, but ends (round 1 goes on credit) well before a
    // command waiting for this attachment's lock would give up on it.
    const deadline = Math.min(timers.now() + addWaitMs, lockedAt + addWaitMs + LOCK_GRACE_MS / 2);
    const sent = await this.withinBudget(frames.length, deadline, 'round 1', () => {
      requireWanted(deps, 'round 1');
      return sendFrames(session.pod.packet, frames, log);
    });
    const firstRoundAt = timers.bootMs();
    log.info('announced', {
      round: 1,
      of: plan.schedule.length,
      frames: totalFrames(sent),
      ips: base.interfaces.flatMap((i) => [...i.ipv4, ...i.ipv6]),
    });
    const gateway = await this.askGateways(dropConflicting(inputs, conflicts), firstRoundAt);
    // Later rounds leave out what the probe found in use, too.
    const interfaces = dropConflicting(base.interfaces, conflicts);
    const report = { sent, conflicts: conflicts.length, gateway };
    // A check with a routed gateway leaves a job: its asks and the node-local proof after round 1 run in the announcer.
    const more =
      (plan.schedule.length > 1 && interfaces.some((i) => i.ipv4.length + i.ipv6.length > 0)) ||
      base.gatewayCheck !== undefined;
    return more ? { ...report, later: { ...base, interfaces, conflicts: conflicts.length, firstRoundAt } } : report;
  }

  /**
   * Probes the IPv4 addresses of round 1 (`frames`) before they are announced, in one window stepped to its end
   * (waiting on its receivers, or for its next probe, between steps); returns what is left to send, and the addresses
   * left out.
   * - fail: the first conflict ends the window and fails ADD (AddressConflictError,
   *   naming the address, the other host's MAC and the interface). Nothing is sent.
   * - warn: each conflicting address is logged and left out; the rest is sent.
   * A probe that cannot run fails ADD under fail (with its own error) and is
   * logged under warn, where the round goes out unprobed.
   */
  private async checkConflicts(
    frames: OutgoingFrame[],
    check: ConflictCheckJob,
  ): Promise<{ frames: OutgoingFrame[]; conflicts: AddressConflict[] }> {
    const { deps, job, session } = this;
    requireWanted(deps, 'the conflict probe');
    const { timers } = deps;
    let probe: SteppedPodProbe | undefined;
    let conflicts: AddressConflict[];
    try {
      probe = SteppedPodProbe.start(deps, session, job.netns, frames, check, timers.now(), check.action === 'fail');
      let now = timers.now();
      while (probe && !probe.step(now)) {
        await deps.waits.readable(probe.fds(), probe.wakeAt(now) - now);
        now = timers.now();
      }
      conflicts = probe?.finish() ?? [];
    } catch (err) {
      probe?.close();
      // A command stopped in the probe's wait goes no further.
      if (check.action === 'fail' || err instanceof NotWantedError) throw err;
      deps.log.error('conflict probe failed: announcing without it', { error: err });
      return { frames, conflicts: [] };
    }
    if (conflicts.length > 0 && check.action === 'fail') throw new AddressConflictError(conflicts);
    return { frames: leaveOutConflicts(frames, conflicts, deps.log), conflicts };
  }

  /**
   * The check after round 1 went out at `firstRoundAt` (boot ms) from `inputs`: its verdict (`pending` under report:
   * the announcer asks at once). Under require, a gateway that does not answer within the window fails ADD
   * (GatewayUnansweredError).
   */
  private async askGateways(inputs: readonly RoundInput[], firstRoundAt: number): Promise<GatewayVerdict> {
    const { deps, job, session } = this;
    const check = job.gatewayCheck;
    if (check.mode === 'off') return OFF_VERDICT;
    const verdict = firstVerdict(check.gateways);
    if (verdict.result !== 'pending' || check.mode === 'report') return verdict;
    requireWanted(deps, 'the gateway check');
    const startedAt = deps.timers.bootMs();
    const ask = openAsk(deps.open, job.netns, gatewayTargets(inputs, check.gateways), check.windowMs, startedAt);
    if (!ask) throw new GatewayUnansweredError(verdict.unanswered, 'no pod address could ask it');
    try {
      const deadline = deps.timers.now() + check.windowMs;
      const sent = await this.withinBudget(ask.requests.length, deadline, 'the gateway check', () =>
        sendAsk(session.pod.packet, ask, deps.log),
      );
      for (;;) {
        const now = deps.timers.bootMs();
        readAsk(deps.libc, ask, now);
        if (ask.window.finished(now)) break;
        await deps.waits.readable(askFds(ask), ask.window.waitMs(now));
      }
      const checked = afterWindow(verdict, askReplies(ask, firstRoundAt), true);
      if (checked.result === 'answered') return checked;
      const what = `${sent} requests sent, no answer within ${check.windowMs} ms`;
      throw new GatewayUnansweredError(checked.unanswered, what);
    } finally {
      for (const fd of releaseAsk(ask)) deps.closeInBackground(fd);
    }
  }

  /**
   * Sends `frames` frames through `send` once the node-wide budget has them, waiting until `deadline` (monotonic ms) at
   * the latest, then on credit: what ADD sends is never dropped. `what` names it in the log.
   */
  private async withinBudget<T>(frames: number, deadline: number, what: string, send: () => T): Promise<T> {
    const { deps } = this;
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
}
