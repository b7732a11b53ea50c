// ADD's part of the gateway check, right after round 1: `off` and an
// attachment without a routed gateway are final at once; `report` leaves the
// asks to the announcer (ADD does not wait); `require` asks here, waits up to
// gatewayCheckMs for every routed gateway, and fails ADD without an answer.
import type { AddDeps } from './announce-on-add';
import { sendWithinBudget } from './budget-wait';
import type { AddressConflict } from './conflict-probe';
import { GatewayUnansweredError } from './errors';
import { askFds, askReplies, gatewayTargets, openAsk, readAsk, releaseAsk, sendAsk } from './gateway-ask';
import type { GatewayCheckMode } from './gateway-check';
import { afterWindow, firstVerdict, OFF_VERDICT, type GatewayVerdict, type RoutedGateway } from './gateway-verdict';
import type { RoundInput } from './readiness';
import type { PodSession } from './session';
import { requireWanted } from './wanted';

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
  deps: AddDeps,
  check: AddGatewayCheck,
  after: AfterRoundOne,
): Promise<GatewayVerdict> {
  if (check.mode === 'off') return OFF_VERDICT;
  const verdict = firstVerdict(check.gateways);
  if (verdict.result !== 'pending' || check.mode === 'report') return verdict;
  const inputs = withoutConflicts(after.inputs, after.conflicts);
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
    deps.release(releaseAsk(ask));
  }
  return checked;
}

/** `inputs` without the IPv4 addresses the conflict probe left out: they never ask. */
function withoutConflicts(inputs: readonly RoundInput[], conflicts: readonly AddressConflict[]): RoundInput[] {
  return inputs.map((input) => ({
    ...input,
    ipv4: input.ipv4.filter((ip) => !conflicts.some((c) => c.interface === input.name && c.address === ip.join('.'))),
  }));
}
