// The node-local proof in the announcer's loop: for a window after round 1,
// what the node itself sees of each bridged pod interface, in the netns of
// the ADD's caller (where the host side of the pod is): the bridge's FDB entry
// for the pod's MAC and the node's neighbour entries for its addresses. One
// read right after round 1 would race the bridge's learning, so the window
// subscribes to neighbour notifications first, reads those entries, then
// follows the notifications until the window closes. Pod interfaces that are no
// bridge port (macvlan, ipvlan, host-device) are said to be out of the node's
// sight.
import type { NodeProof } from '../announce/gateway-verdict';
import { NodeWatch, type NodeWatchPod } from '../announce/node-proof';
import { describeNodeProof } from '../announce/gateway-verdict';
import { formatMac } from '../wire/ethernet';
import { AF_BRIDGE, AF_INET, AF_INET6, parseNeighChange, RtnlGroup } from '../wire/rtnetlink';
import type { HostSockets } from '../sys/netns';
import { hasErrno } from '../sys/sys-error';
import type { Counters } from './counters';
import { jobOpener } from './job-view';
import type { PodVisit } from './pod-visit';
import type { RoundDeps, Work } from './rounds';

/** The families dumped where one get per entry cannot tell (readInto). */
const DUMPED = [AF_BRIDGE, AF_INET, AF_INET6] as const;

/** One attachment's window: the sockets it follows, a watch per bridged interface, and when it closes (boot ms). */
export interface NodeWork {
  sockets: HostSockets;
  watches: { name: string; watch: NodeWatch }[];
  unseen: NodeProof[];
  until: number;
}

/**
 * Opens the window of `w` at `now` for `windowMs`, looking at the pod through `visit` (the caller's, which it closes):
 * the proofs at once when no interface is a bridge port (or the pod cannot be entered), else the open window.
 */
export function startNodeWatch(
  deps: RoundDeps,
  w: Work,
  now: number,
  windowMs: number,
  visit: () => PodVisit,
): NodeWork | NodeProof[] {
  const opened = visit();
  const open = jobOpener(deps, w.job);
  if ('gone' in opened || !open) return [];
  const bridged: { name: string; pod: NodeWatchPod }[] = [];
  const unseen: NodeProof[] = [];
  const { session, targets } = opened;
  const host = session.host.rtnl;
  for (const t of targets) {
    const peer = t.iface.hostPeer && host.linkByIndex(t.iface.hostPeer.index);
    const bridge = peer?.master === undefined ? undefined : host.linkByIndex(peer.master);
    const mac = session.pod.rtnl.linkByIndex(t.iface.index)?.mac;
    if (!peer || bridge?.kind !== 'bridge' || mac?.length !== 6) {
      unseen.push({ interface: t.name, unseen: unseenWhy(t.iface.kind, peer !== undefined) });
      continue;
    }
    const pod = { mac: formatMac(mac), portIndex: peer.index, portName: peer.name, bridgeIndex: bridge.index };
    bridged.push({ name: t.name, pod: { ...pod, addresses: [...t.ipv4, ...t.ipv6] } });
  }
  if (bridged.length === 0) return unseen;
  // Subscribed before the dump: nothing that changes in between is missed. Other ports are named through the
  // window's own socket (the visit's closes at the end of this turn).
  const sockets = open.host(undefined, [RtnlGroup.Neigh]);
  const portName = (i: number): string => sockets.rtnl.linkByIndex(i)?.name ?? `ifindex ${i}`;
  const watches = bridged.map(({ name, pod }) => ({ name, watch: new NodeWatch(pod, portName) }));
  const work = { sockets, watches, unseen, until: now + windowMs };
  readInto(work);
  return work;
}

/** Feeds what changed (or a fresh dump, when notifications overflowed); the proofs once the window is over. */
export function stepNodeWatch(work: NodeWork, now: number, changed: ReadonlySet<number>): NodeProof[] | undefined {
  if (changed.has(work.sockets.events.fd)) {
    const { messages, overflowed } = work.sockets.events.take();
    if (overflowed) readInto(work);
    else {
      for (const change of messages.flatMap((m) => parseNeighChange(m) ?? [])) {
        for (const { watch } of work.watches) watch.observe(change.entry, change.deleted);
      }
    }
  }
  // The whole window, even once all looks right: another port taking the pod's MAC later is a duplicate.
  if (now < work.until) return undefined;
  work.sockets.close();
  const seen = work.watches.map(({ name, watch }): NodeProof => ({ interface: name, seen: watch.verdict() }));
  return [...seen, ...work.unseen];
}

/** Closes a window that is given up (the work ends). */
export function dropNodeWatch(work: NodeWork): void {
  work.sockets.close();
}

/** Counts the mismatches of `proofs` by kind, and says what the node saw in one line. */
export function countNodeProofs(counters: Counters, proofs: readonly NodeProof[]): string {
  for (const p of proofs) {
    if (!('seen' in p)) continue;
    if (p.seen.fdb.kind === 'duplicate') counters.nodeMismatches.duplicateMac++;
    if (p.seen.fdb.kind === 'not-learned') counters.nodeMismatches.notLearned++;
    counters.nodeMismatches.staleNeighbour += p.seen.neighbours.filter((n) => n.kind === 'stale').length;
  }
  return proofs.map(describeNodeProof).join('; ');
}

/**
 * Feeds each watch what the node holds now: one get per entry it rests on (Linux 5.0), so that a window costs the same
 * on a node of many pods. Where a get cannot tell, the whole tables are dumped: before Linux 5.0 (EOPNOTSUPP), and
 * when the bridge has no entry for the MAC in VLAN 0 (not learned yet, or a VLAN-filtering bridge, which keys its
 * entries by VLAN).
 */
function readInto(work: NodeWork): void {
  const { rtnl } = work.sockets;
  try {
    for (const { watch } of work.watches) {
      const { bridgeIndex, mac, neighbours } = watch.entriesToRead();
      const fdb = rtnl.fdbEntry(bridgeIndex, mac);
      if (!fdb) return dumpInto(work);
      watch.observe(fdb);
      for (const { family, dst } of neighbours) {
        const entry = rtnl.neighbour(family, bridgeIndex, dst);
        if (entry) watch.observe(entry);
      }
    }
  } catch (err) {
    if (!hasErrno(err, 'ENOTSUP')) throw err; // EOPNOTSUPP: the same errno (95)
    dumpInto(work);
  }
}

function dumpInto(work: NodeWork): void {
  for (const family of DUMPED) {
    for (const entry of work.sockets.rtnl.neighbours(family)) {
      for (const { watch } of work.watches) watch.observe(entry);
    }
  }
}

function unseenWhy(kind: string | undefined, veth: boolean): string {
  if (veth) return 'its host-side veth is no bridge port: the node cannot see the segment';
  return `a ${kind ?? 'non-veth'} interface: the node cannot see the segment`;
}
