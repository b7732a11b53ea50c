// The gateway check in the announcer's loop: an ask right after round 1 (ADD under report, or a deferred round 1) and
// once more after each later round, until every routed gateway answered. An ask takes its frames from the node-wide
// budget, enters the pod to read its MAC and addresses as they are now, opens its receivers, sends, and leaves the
// pod; the receivers join the loop's poll until the window closes.
//
// After round 1, the node-local proof runs its window too: what the node itself sees of each bridged pod interface, in
// the netns of the ADD's caller (where the host side of the pod is): the bridge's FDB entry for the pod's MAC and the
// node's neighbour entries for its addresses. One read right after round 1 would race the bridge's learning, so the
// window subscribes to neighbour notifications first, reads those entries, then follows the notifications until it
// closes. Pod interfaces that are no bridge port (macvlan, ipvlan, host-device) are out of the node's sight. The final
// verdict goes to the record once both are over.
import {
  askFds,
  askReplies,
  gatewayTargets,
  openAsk,
  plannedRequests,
  readAsk,
  releaseAsk,
  sendAsk,
} from '../announce/gateway-ask';
import type { OpenAsk } from '../announce/gateway-ask';
import { afterWindow, describeNodeProof, describeVerdict, firstVerdict, isFinal } from '../announce/gateway-verdict';
import type { GatewayVerdict, NodeProof } from '../announce/gateway-verdict';
import type { BackgroundJob } from '../announce/background-job';
import { NodeWatch, type NodeWatchPod } from '../announce/node-proof';
import { readiness, type PodSession } from '../announce/session';
import type { HostSockets } from '../sys/netns';
import { hasErrno } from '../sys/sys-error';
import { formatMac } from '../wire/ethernet';
import { AF_BRIDGE, AF_INET, AF_INET6, parseNeighChange, RtnlGroup } from '../wire/rtnetlink';
import { countVerdict } from './metrics';
import type { Announcer } from './daemon';
import { openForJob, visitOf, type OpenPod, type PodVisit, type Work } from './rounds';

/** One attachment's gateway check in the announcer. */
export interface GatewayWork {
  verdict: GatewayVerdict;
  /** When to ask next (boot ms), once no ask is open; undefined: after the next round. */
  askAt?: number | undefined;
  ask?: OpenAsk | undefined;
  /** When to open the node-local proof's window (boot ms): right after round 1. */
  nodeAt?: number | undefined;
  node?: NodeWindow | undefined;
  /** ADD's pod session, still open, for the first visit: it saves entering the pod again right after ADD. */
  handed?: PodSession | undefined;
}

/** One attachment's node-local window: the sockets it follows, a watch per bridged interface, and when it closes. */
interface NodeWindow {
  sockets: HostSockets;
  watches: { name: string; watch: NodeWatch }[];
  unseen: NodeProof[];
  /** Boot ms. */
  until: number;
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
  const askAt = !isFinal(first) && when.askNow && roundOneSent ? now : undefined;
  return { verdict: first, askAt, nodeAt };
}

/** The fds of an open ask and of an open node-local window, for the loop's poll. */
export function gatewayFds(w: Work): number[] {
  const g = w.gateway;
  return [...(g?.ask ? askFds(g.ask) : []), ...(g?.node ? [g.node.sockets.events.fd] : [])];
}

/** When the check next needs the loop (boot ms): a window's end, its next ask; Infinity: not before a round. */
export function gatewayWakeAt(w: Work, now: number): number {
  const g = w.gateway;
  if (!g) return Infinity;
  const asks = g.ask ? now + g.ask.window.waitMs(now) : g.askAt;
  const node = g.node ? g.node.until : g.nodeAt;
  return Math.min(asks ?? Infinity, node ?? Infinity);
}

/** Whether the check still has work: an ask open or planned (until it is final), a node-local window open or due. */
export function gatewayBusy(w: Work): boolean {
  const g = w.gateway;
  if (!g) return false;
  const asking = !isFinal(g.verdict) && (g.ask !== undefined || g.askAt !== undefined);
  return asking || g.node !== undefined || g.nodeAt !== undefined;
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

/**
 * Steps the check at `now`: the node window, then the ask (an open one reads what came; a due one opens). One that
 * throws is counted and logged, and the rounds keep their schedule.
 */
export async function runGatewayDue(a: Announcer, w: Work, now: number, changed: ReadonlySet<number>): Promise<void> {
  const g = w.gateway;
  if (!g) return;
  // The node window and the first ask fall due in the same turn: they share one entry into the pod (ADD's, if handed).
  let opened: PodVisit | undefined = g.handed && visitOf(a, g.handed, w.job);
  g.handed = undefined;
  // A visit of its own checks the netns path first, as a round does: never a pod that came after this one.
  const visit = (): PodVisit => (opened ??= a.jobs.wanted(w) ? openForJob(a, w.job) : { gone: 'pod gone' });
  try {
    await runNodeDue(a, w, now, changed, visit);
    if (isFinal(g.verdict)) return;
    if (!g.ask) {
      if (g.askAt !== undefined && g.askAt <= now) startAsk(a, w, now, visit);
      return;
    }
    if (!askFds(g.ask).some((fd) => changed.has(fd)) && !g.ask.window.finished(now)) return;
    readAsk(a.libc, g.ask, now);
    if (!g.ask.window.finished(now)) return;
    const replies = askReplies(g.ask, w.job.firstRoundAt ?? g.ask.startedAt);
    dropAsk(a, w);
    // The last ask: no round is left, and none went out while this window was open.
    const last = w.dueAt === undefined && !w.deferred && g.askAt === undefined;
    await settle(a, w, afterWindow(g.verdict, replies, last));
  } catch (err) {
    a.counters.errors++;
    w.log.error('gateway check failed', { error: err });
  } finally {
    if (opened && !('gone' in opened)) opened.session.close();
  }
}

/** Closes an open ask's receivers (on another thread), a node-local window and a handed session: the work ends. */
export function dropGateway(a: Announcer, w: Work): void {
  const g = w.gateway;
  if (!g) return;
  const { node, handed } = g;
  [g.node, g.nodeAt, g.handed] = [undefined, undefined, undefined];
  node?.sockets.close();
  handed?.close();
  dropAsk(a, w);
}

function dropAsk(a: Announcer, w: Work): void {
  const ask = w.gateway?.ask;
  if (!ask) return;
  w.gateway!.ask = undefined;
  for (const fd of releaseAsk(ask)) a.closeInBackground(fd);
}

/** Takes the ask's frames from the budget, enters the pod, opens the receivers and sends the requests. */
function startAsk(a: Announcer, w: Work, now: number, visit: () => PodVisit): void {
  const g = w.gateway!;
  const taken = a.frameBudget.later.take(plannedRequests(w.job.interfaces, g.verdict.unanswered), a.timers.bootMs());
  if (!taken.ok) {
    g.askAt = now + taken.waitMs;
    return;
  }
  g.askAt = undefined;
  const opened = visit();
  if ('gone' in opened) {
    w.log.info('gateway check: cannot ask now', { why: opened.gone });
    return;
  }
  const seen = readiness(opened.session, opened.targets);
  if (seen.kind !== 'ready') {
    w.log.info('gateway check: the pod is not ready to ask from: asking after the next round');
    return;
  }
  const targets = gatewayTargets(seen.inputs, g.verdict.unanswered);
  const ask = openAsk(opened.open, w.job.netns, targets, w.job.gatewayCheck!.windowMs, now);
  if (!ask) return;
  g.ask = ask;
  a.counters.gateway.asks++;
  a.counters.gateway.requests += sendAsk(opened.session.pod.packet, ask, w.log);
}

/** The work ends (its burst is over, its pod gone): a check still waiting for an answer has none. */
export async function endGateway(a: Announcer, w: Work): Promise<void> {
  dropGateway(a, w);
  const g = w.gateway;
  if (g && !isFinal(g.verdict)) await settle(a, w, { ...g.verdict, result: 'no-answer' });
}

/** Takes a verdict after a window: a final one is logged, counted and recorded (by the node window, once it closes). */
async function settle(a: Announcer, w: Work, verdict: GatewayVerdict): Promise<void> {
  const g = w.gateway!;
  const before = g.verdict.answered.length;
  g.verdict = verdict;
  for (const r of verdict.answered.slice(before)) a.metrics.observe('gatewayAnswer', r.afterMs / 1000);
  if (!isFinal(verdict)) return;
  countVerdict(a.counters, verdict);
  w.log.info(`gateway check: ${describeVerdict(verdict)}`, { gateway: verdict });
  // One write per attachment: a node window still to close records the verdict then, with its proofs.
  if (g.node === undefined && g.nodeAt === undefined) await a.jobs.recordVerdict(w);
}

/** Opens the node-local window when due, follows it while open, and notes its proofs once it closes. */
async function runNodeDue(
  a: Announcer,
  w: Work,
  now: number,
  changed: ReadonlySet<number>,
  visit: () => PodVisit,
): Promise<void> {
  const g = w.gateway!;
  let proofs: NodeProof[] | undefined;
  if (g.node) {
    proofs = stepNodeWindow(g.node, now, changed);
    if (proofs) g.node = undefined;
  } else if (g.nodeAt !== undefined && g.nodeAt <= now) {
    g.nodeAt = undefined;
    const opened = visit();
    const started = 'gone' in opened ? [] : openNodeWindow(opened, now + w.job.gatewayCheck!.windowMs);
    if (Array.isArray(started)) proofs = started;
    else g.node = started;
  }
  if (!proofs || proofs.length === 0) return;
  g.verdict = { ...g.verdict, node: proofs };
  w.log.info(`node view: ${countNodeProofs(a, proofs)}`, { node: proofs });
  // A verdict already final was recorded without the node's view.
  if (isFinal(g.verdict)) await a.jobs.recordVerdict(w);
}

/**
 * Opens the node-local window of an entered pod until `until`: the proofs at once when no interface is a bridge port,
 * else the open window.
 */
function openNodeWindow(opened: OpenPod, until: number): NodeWindow | NodeProof[] {
  const bridged: { name: string; pod: NodeWatchPod }[] = [];
  const unseen: NodeProof[] = [];
  const { session, targets } = opened;
  const host = session.host.rtnl;
  for (const t of targets) {
    const peer = t.iface.hostPeer && host.linkByIndex(t.iface.hostPeer.index);
    const bridge = peer?.master === undefined ? undefined : host.linkByIndex(peer.master);
    const mac = session.pod.rtnl.linkByIndex(t.iface.index)?.mac;
    if (!peer || bridge?.kind !== 'bridge' || mac?.length !== 6) {
      const what = peer ? 'its host-side veth is no bridge port' : `a ${t.iface.kind ?? 'non-veth'} interface`;
      unseen.push({ interface: t.name, unseen: `${what}: the node cannot see the segment` });
      continue;
    }
    const pod = { mac: formatMac(mac), portIndex: peer.index, portName: peer.name, bridgeIndex: bridge.index };
    bridged.push({ name: t.name, pod: { ...pod, addresses: [...t.ipv4, ...t.ipv6] } });
  }
  if (bridged.length === 0) return unseen;
  // Subscribed before the reads: nothing that changes in between is missed. Other ports are named through the
  // window's own socket (the visit's closes at the end of this turn).
  const sockets = opened.open.host(undefined, [RtnlGroup.Neigh]);
  const portName = (i: number): string => sockets.rtnl.linkByIndex(i)?.name ?? `ifindex ${i}`;
  const watches = bridged.map(({ name, pod }) => ({ name, watch: new NodeWatch(pod, portName) }));
  const window = { sockets, watches, unseen, until };
  try {
    readInto(window);
  } catch (err) {
    sockets.close(); // no window to close it later
    throw err;
  }
  return window;
}

/** Feeds what changed (or a fresh read, when notifications overflowed); the proofs once the window is over. */
function stepNodeWindow(window: NodeWindow, now: number, changed: ReadonlySet<number>): NodeProof[] | undefined {
  if (changed.has(window.sockets.events.fd)) {
    const { messages, overflowed } = window.sockets.events.take();
    if (overflowed) readInto(window);
    else {
      for (const change of messages.flatMap((m) => parseNeighChange(m) ?? [])) {
        for (const { watch } of window.watches) watch.observe(change.entry, change.deleted);
      }
    }
  }
  // The whole window, even once all looks right: another port taking the pod's MAC later is a duplicate.
  if (now < window.until) return undefined;
  window.sockets.close();
  const seen = window.watches.map(({ name, watch }): NodeProof => ({ interface: name, seen: watch.verdict() }));
  return [...seen, ...window.unseen];
}

/** Counts the mismatches of `proofs` by kind, and says what the node saw in one line. */
function countNodeProofs(a: Announcer, proofs: readonly NodeProof[]): string {
  const counts = a.counters.nodeMismatches;
  for (const p of proofs) {
    if (!('seen' in p)) continue;
    if (p.seen.fdb.kind === 'duplicate') counts.duplicateMac++;
    if (p.seen.fdb.kind === 'not-learned') counts.notLearned++;
    counts.staleNeighbour += p.seen.neighbours.filter((n) => n.kind === 'stale').length;
  }
  return proofs.map(describeNodeProof).join('; ');
}

/**
 * Feeds each watch what the node holds now: one get per entry it rests on (Linux 5.0), so that a window costs the same
 * on a node of many pods. Where a get cannot tell, the whole tables are dumped: before Linux 5.0 (EOPNOTSUPP), and
 * when the bridge has no entry for the MAC in VLAN 0 (not learned yet, or a VLAN-filtering bridge, which keys its
 * entries by VLAN).
 */
function readInto(window: NodeWindow): void {
  const { rtnl } = window.sockets;
  try {
    for (const { watch } of window.watches) {
      const { bridgeIndex, mac, neighbours } = watch.entriesToRead();
      const fdb = rtnl.fdbEntry(bridgeIndex, mac);
      if (!fdb) return dumpInto(window);
      watch.observe(fdb);
      for (const { family, dst } of neighbours) {
        const entry = rtnl.neighbour(family, bridgeIndex, dst);
        if (entry) watch.observe(entry);
      }
    }
  } catch (err) {
    if (!hasErrno(err, 'ENOTSUP')) throw err; // EOPNOTSUPP: the same errno
    dumpInto(window);
  }
}

function dumpInto(window: NodeWindow): void {
  for (const family of [AF_BRIDGE, AF_INET, AF_INET6]) {
    for (const entry of window.sockets.rtnl.neighbours(family)) {
      for (const { watch } of window.watches) watch.observe(entry);
    }
  }
}
