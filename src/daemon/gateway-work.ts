// The gateway check in the announcer's loop: an ask right after round 1 (ADD
// under report, or a deferred round 1) and once more after each later round,
// until every routed gateway answered. An ask takes its frames from the
// node-wide budget, enters the pod to read its MAC and addresses as they are
// now, opens its receivers, sends, and leaves the pod; the receivers join the
// loop's poll until the window closes. After round 1, the node-local proof
// (node-work.ts) runs its window too. The final verdict goes to the record,
// once both are over.
import { askFds, askReplies, gatewayTargets, openAsk, plannedRequests, readAsk } from '../announce/gateway-ask';
import { releaseAsk, sendAsk } from '../announce/gateway-ask';
import { afterWindow, describeVerdict, isFinal } from '../announce/gateway-verdict';
import type { GatewayVerdict, NodeProof } from '../announce/gateway-verdict';
import { readiness } from '../announce/session';
import { countVerdict, type Counters } from './counters';
import { jobOpener } from './job-view';
import { countNodeProofs, dropNodeWatch, startNodeWatch, stepNodeWatch } from './node-work';
import { closeSession, openForJob, visitOf, type PodVisit } from './pod-visit';
import type { RoundDeps, Work } from './rounds';

/** What the check needs besides the rounds' deps: where its verdicts go. */
export interface GatewayDeps extends RoundDeps {
  /** Writes the verdict into the attachment's record (under its lock, only while the table holds the work). */
  recordVerdict(w: Work): Promise<void>;
  /** Whether the table still holds `w` and its netns path still names the pod's netns (a round's check). */
  wanted(w: Work): boolean;
  /** One gateway's time from round 1 to its answer. */
  observeGatewayAnswer(seconds: number): void;
}

/** Steps the check at `now`: an open ask reads what came (and closes once over); a due ask opens. */
export async function runGatewayDue(
  deps: GatewayDeps,
  counters: Counters,
  w: Work,
  now: number,
  changed: ReadonlySet<number>,
): Promise<void> {
  const g = w.gateway;
  if (!g) return;
  // The node window and the first ask fall due in the same turn: they share one entry into the pod (ADD's, if handed).
  let opened: PodVisit | undefined = g.handed && visitOf(deps, g.handed, w.job);
  g.handed = undefined;
  // A visit of its own checks the netns path first, as a round does: never a pod that came after this one.
  const visit = (): PodVisit => (opened ??= deps.wanted(w) ? openForJob(deps, w.job) : { gone: 'pod gone' });
  try {
    await runNodeDue(deps, counters, w, now, changed, visit);
    if (!isFinal(g.verdict)) await runAskDue(deps, counters, w, now, changed, visit);
  } finally {
    if (opened && !('gone' in opened)) closeSession(deps, opened.session);
  }
}

/** An open ask reads what came (and closes once over); a due ask opens. */
async function runAskDue(
  deps: GatewayDeps,
  counters: Counters,
  w: Work,
  now: number,
  changed: ReadonlySet<number>,
  visit: () => PodVisit,
): Promise<void> {
  const g = w.gateway!;
  if (g.ask) {
    if (!askFds(g.ask).some((fd) => changed.has(fd)) && !g.ask.window.finished(now)) return;
    readAsk(deps.libc, g.ask, now);
    if (!g.ask.window.finished(now)) return;
    const replies = askReplies(g.ask, w.firstRoundAt ?? g.ask.startedAt);
    dropAsk(deps, w);
    // The last ask: no round is left, and none went out while this window was open.
    const last = w.dueAt === undefined && !w.deferred && g.askAt === undefined;
    await settle(deps, counters, w, afterWindow(g.verdict, replies, last));
    return;
  }
  if (g.askAt !== undefined && g.askAt <= now) await startAsk(deps, counters, w, now, visit);
}

/** Closes an open ask's receivers (on another thread) and a node-local window: the work ends. */
export function dropGateway(deps: Pick<RoundDeps, 'closeInBackground'>, w: Work): void {
  const g = w.gateway;
  if (!g) return;
  const { node, handed } = g;
  [g.node, g.nodeAt, g.handed] = [undefined, undefined, undefined];
  if (node) dropNodeWatch(node);
  if (handed) closeSession(deps, handed);
  dropAsk(deps, w);
}

/** Closes an open ask's receivers, on another thread. */
function dropAsk(deps: Pick<RoundDeps, 'closeInBackground'>, w: Work): void {
  const ask = w.gateway?.ask;
  if (!ask) return;
  w.gateway!.ask = undefined;
  for (const fd of releaseAsk(ask)) deps.closeInBackground(fd);
}

/** Opens the node-local window when due, follows it while open, and notes its proofs once it closes. */
async function runNodeDue(
  deps: GatewayDeps,
  counters: Counters,
  w: Work,
  now: number,
  changed: ReadonlySet<number>,
  visit: () => PodVisit,
): Promise<void> {
  const g = w.gateway!;
  let proofs: NodeProof[] | undefined;
  if (g.node) {
    proofs = stepNodeWatch(g.node, now, changed);
    if (proofs) g.node = undefined;
  } else if (g.nodeAt !== undefined && g.nodeAt <= now) {
    g.nodeAt = undefined;
    const started = startNodeWatch(deps, w, now, w.job.gatewayCheck?.windowMs ?? 0, visit);
    if (Array.isArray(started)) proofs = started;
    else g.node = started;
  }
  if (!proofs || proofs.length === 0) return;
  g.verdict = { ...g.verdict, node: proofs };
  w.log.info(`node view: ${countNodeProofs(counters, proofs)}`, { node: proofs });
  // A verdict already final was recorded without the node's view.
  if (isFinal(g.verdict)) await deps.recordVerdict(w);
}

/** Takes the ask's frames from the budget, enters the pod, opens the receivers and sends the requests. */
async function startAsk(
  deps: GatewayDeps,
  counters: Counters,
  w: Work,
  now: number,
  visit: () => PodVisit,
): Promise<void> {
  const g = w.gateway!;
  const check = w.job.gatewayCheck!;
  const taken = await deps.budget().take(
    plannedRequests(w.job.interfaces, g.verdict.unanswered),
    () => deps.timers.bootMs(),
    false,
    () => {},
  );
  if (!taken.ok) {
    g.askAt = now + taken.waitMs;
    return;
  }
  g.askAt = undefined;
  const opened = visit();
  const open = jobOpener(deps, w.job);
  if ('gone' in opened || !open) {
    w.log.info('gateway check: cannot ask now', { why: 'gone' in opened ? opened.gone : 'no view' });
    return;
  }
  const seen = readiness(opened.session, opened.targets);
  if (seen.kind !== 'ready') {
    w.log.info('gateway check: the pod is not ready to ask from: asking after the next round');
    return;
  }
  const targets = gatewayTargets(seen.inputs, g.verdict.unanswered);
  const ask = openAsk(open, w.job.netns, targets, check.windowMs, now);
  if (!ask) return;
  g.ask = ask;
  counters.gateway.asks++;
  counters.gateway.requests += sendAsk(opened.session.pod.packet, ask, w.log);
}

/** The work ends (its burst is over, its pod gone): a check still waiting for an answer has none. */
export async function endGateway(deps: GatewayDeps, counters: Counters, w: Work): Promise<void> {
  dropGateway(deps, w);
  const g = w.gateway;
  if (g && !isFinal(g.verdict)) await settle(deps, counters, w, { ...g.verdict, result: 'no-answer' });
}

/** Takes a verdict after a window: a final one is logged, counted and recorded (by the node window, once it closes). */
async function settle(deps: GatewayDeps, counters: Counters, w: Work, verdict: GatewayVerdict): Promise<void> {
  const g = w.gateway!;
  const before = g.verdict.answered.length;
  g.verdict = verdict;
  for (const r of verdict.answered.slice(before)) deps.observeGatewayAnswer(r.afterMs / 1000);
  if (!isFinal(verdict)) return;
  countVerdict(counters, verdict);
  w.log.info(`gateway check: ${describeVerdict(verdict)}`, { gateway: verdict });
  // One write per attachment: a node window still to close records the verdict then, with its proofs.
  if (g.node === undefined && g.nodeAt === undefined) await deps.recordVerdict(w);
}
