// The gateway check's state in one work, and when it needs the announcer's loop: the next ask, the node-local window,
// their fds. Pure: gateway-work.ts runs the steps.
import { askFds, type OpenAsk } from '../announce/gateway-ask';
import { firstVerdict, isFinal, type GatewayVerdict } from '../announce/gateway-verdict';
import type { BackgroundJob } from '../announce/background-job';
import type { PodSession } from '../announce/session';
import type { NodeWork } from './node-work';
import type { Work } from './rounds';

/** One attachment's gateway check in the announcer. */
export interface GatewayWork {
  verdict: GatewayVerdict;
  /** When to ask next (boot ms), once no ask is open; undefined: after the next round. */
  askAt?: number | undefined;
  ask?: OpenAsk | undefined;
  /** When to open the node-local proof's window (boot ms): right after round 1. */
  nodeAt?: number | undefined;
  node?: NodeWork | undefined;
  /** ADD's pod session, still open, for the first visit: it saves entering the pod again right after ADD. */
  handed?: PodSession | undefined;
}

/**
 * The check of a job the table takes: `verdict` as ADD or the record left it (else pending). A pending one asks at
 * once when `askNow` (ADD's report, or no round left to ask after), else after the next round; `afterRoundOne`: ADD
 * just sent round 1, so the node-local proof opens its window now.
 */
export function gatewayWorkOf(
  job: BackgroundJob,
  verdict: GatewayVerdict | undefined,
  now: number,
  when: { askNow: boolean; afterRoundOne: boolean },
): GatewayWork | undefined {
  const check = job.gatewayCheck;
  if (!check) return undefined;
  const first = verdict ?? firstVerdict(check.gateways);
  const roundOneSent = job.firstRoundAt !== undefined;
  const nodeAt = when.afterRoundOne && roundOneSent ? now : undefined;
  if (isFinal(first)) return { verdict: first, nodeAt };
  return { verdict: first, askAt: when.askNow && roundOneSent ? now : undefined, nodeAt };
}

/** The fds of an open ask and of an open node-local window, for the loop's poll. */
export function gatewayFds(w: Work): number[] {
  const g = w.gateway;
  return [...(g?.ask ? askFds(g.ask) : []), ...(g?.node ? [g.node.sockets.events.fd] : [])];
}

/** When the check next needs the loop (boot ms): a window's end, its next ask; undefined: not before a round. */
export function gatewayWakeAt(w: Work, now: number): number | undefined {
  const g = w.gateway;
  if (!g) return undefined;
  const asks = g.ask ? now + g.ask.window.waitMs(now) : g.askAt;
  const node = g.node ? g.node.until : g.nodeAt;
  return asks === undefined ? node : node === undefined ? asks : Math.min(asks, node);
}

/** Whether the check still has work: an ask open or planned (until it is final), a node-local window open or due. */
export function gatewayBusy(w: Work): boolean {
  const g = w.gateway;
  if (!g) return false;
  return (
    (!isFinal(g.verdict) && (g.ask !== undefined || g.askAt !== undefined)) ||
    g.node !== undefined ||
    g.nodeAt !== undefined
  );
}

/**
 * A round went out at `now`: ask once more if a gateway has not answered yet (once an open window closes); after
 * round 1 (`first`), the node-local proof opens its window too.
 */
export function askAfterRound(w: Work, now: number, first = false): void {
  const g = w.gateway;
  if (g && !isFinal(g.verdict)) g.askAt = now;
  if (g && first) g.nodeAt = now;
}

/**
 * Keeps ADD's open pod session for the check's first visit, when one is due at once (an ask, the node window); false:
 * none is, and the caller closes it.
 */
export function adoptVisit(w: Work, session: PodSession): boolean {
  const g = w.gateway;
  if (!g || (g.askAt === undefined && g.nodeAt === undefined)) return false;
  g.handed = session;
  return true;
}
