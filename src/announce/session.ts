// Sockets into one pod plus the interfaces found there, and whether they may be announced now: what ADD and each
// background round work with. A pod interface is found in the pod netns and, for a veth, its host-side peer and
// bridge port; it is ready once its link is up with carrier, its bridge port forwards and no planned IPv6 address is
// tentative, and a round then sends what is really on it.
import type { FrameReceiver } from '../sys/packet-socket';
import type { CallerView } from '../sys/caller-view';
import type { Libc } from '../sys/libc';
import { openReceivers, openHostSockets, openPodSockets, type HostSockets, type PodSockets } from '../sys/netns';
import type { Rtnl } from '../sys/rtnl';
import { parseIPv4, parseIPv6 } from '../wire/ip';
import { PortState, type LinkInfo } from '../wire/rtnetlink';
import type { Timers, Waits } from './context';

/** A pod interface as found in the pod netns, with its host-side bridge port if it has one. */
export interface ResolvedInterface {
  name: string;
  index: number;
  kind: string | undefined;
  /** Set when the pod link is an ipvlan: l3/l3s modes have no L2 neighbours to fix. */
  ipvlanMode: 'l2' | 'l3' | 'l3s' | undefined;
  /** The veth peer in the host netns, when there is one. */
  hostPeer: { index: number; name: string } | undefined;
}

/**
 * Looks up `name` in the pod netns and its veth peer in the host netns.
 * IFLA_LINK names the peer's ifindex in the netns of IFLA_LINK_NETNSID, so a
 * host link with that index counts only if it is a veth whose own IFLA_LINK
 * points back at the pod link; `hostNameHints` (prevResult's host-side
 * interfaces) are tried when it does not.
 */
export function resolveInterface(
  pod: Rtnl,
  host: Rtnl,
  name: string,
  hostNameHints: readonly string[],
): ResolvedInterface | undefined {
  const link = pod.linkByName(name);
  if (!link) return undefined;
  const { index, kind, ipvlanMode } = link;
  return { name, index, kind, ipvlanMode, hostPeer: findHostPeer(link, host, hostNameHints) };
}

function findHostPeer(link: LinkInfo, host: Rtnl, hostNameHints: readonly string[]): ResolvedInterface['hostPeer'] {
  if (link.kind !== 'veth' || link.linkIndex === undefined || link.linkNetnsid === undefined) return undefined;
  const isPeer = (h: LinkInfo | undefined): h is LinkInfo =>
    h !== undefined && h.kind === 'veth' && h.linkIndex === link.index && h.linkNetnsid !== undefined;
  let peer: LinkInfo | undefined = host.linkByIndex(link.linkIndex);
  for (const hint of hostNameHints) {
    if (isPeer(peer)) break;
    peer = host.linkByName(hint);
  }
  return isPeer(peer) ? { index: peer.index, name: peer.name } : undefined;
}

/** Open sockets into a pod and the host, with the pod interfaces resolved. */
export interface PodSession {
  pod: PodSockets;
  host: HostSockets;
  interfaces: ResolvedInterface[];
  /** Planned interface names that do not exist in the pod. */
  missing: string[];
  /**
   * The sockets that become readable when a pod link or address, or a host link (bridge port), changes; wait on them,
   * then call drainEvents.
   */
  eventFds: readonly number[];
  /** Discards queued change notifications. */
  drainEvents(): void;
  close(): void;
}

/**
 * Opens sockets in the host's netns or a pod's (sys/netns.ts): injected, so that the announce layer is tested without
 * root.
 */
export interface SocketOpener {
  pod(netns: string): PodSockets;
  /**
   * In the netns at `netns`, or the announcer's own without one; its events follow `groups` (RtnlGroup values; default
   * links).
   */
  host(netns?: string, groups?: readonly number[]): HostSockets;
  /** One receiver of `ethertype` frames per pod interface index (the conflict probe's, the gateway check's). */
  receivers(netns: string, ifindexes: readonly number[], ethertype: number): FrameReceiver[];
}

/** The real sockets, through the one netns switch. */
export function netnsSockets(libc: Libc): SocketOpener {
  return {
    pod: (netns) => openPodSockets(libc, netns),
    host: (netns, groups) => openHostSockets(libc, netns, groups),
    receivers: (netns, ifindexes, ethertype) => openReceivers(libc, netns, ifindexes, ethertype),
  };
}

/**
 * `open`, each netns path taken as `view` sees it (the caller's mount namespace and root), and the host's sockets in
 * the caller's netns.
 */
export function inView(open: SocketOpener, view: CallerView): SocketOpener {
  return {
    pod: (netns) => open.pod(view.path(netns)),
    host: (_netns, groups) => open.host(view.hostNetns, groups),
    receivers: (netns, ifindexes, ethertype) => open.receivers(view.path(netns), ifindexes, ethertype),
  };
}

/**
 * Opens the pod's sockets by path and resolves `names` there (and their host veth peers). Its close hands the packet
 * socket to `closeInBackground` (its close waits for an RCU grace period).
 */
export function openSession(
  { open, closeInBackground }: { open: SocketOpener; closeInBackground(fd: number): void },
  netns: string,
  names: readonly string[],
  hostPeerNames: readonly string[],
): PodSession {
  const pod = open.pod(netns);
  let host: HostSockets | undefined;
  try {
    host = open.host();
    const interfaces: ResolvedInterface[] = [];
    const missing: string[] = [];
    for (const name of names) {
      const found = resolveInterface(pod.rtnl, host.rtnl, name, hostPeerNames);
      if (found) interfaces.push(found);
      else missing.push(name);
    }
    const h = host;
    return {
      pod,
      host: h,
      interfaces,
      missing,
      eventFds: [pod.events.fd, h.events.fd],
      drainEvents: () => (pod.events.drain(), h.events.drain()),
      close: () => {
        try {
          closeInBackground(pod.packet.release());
        } finally {
          pod.close();
          h.close();
        }
      },
    };
  } catch (err) {
    pod.close();
    host?.close();
    throw err;
  }
}

/** The addresses to announce on one interface, canonical text as in prevResult. */
export interface AnnounceTarget {
  name: string;
  ipv4: readonly string[];
  ipv6: readonly string[];
}

/** A target and its interface as found in the pod. */
export type PodTarget = AnnounceTarget & { iface: ResolvedInterface };

/** What one round sends for an interface: its current MAC and the addresses really on it. */
export interface RoundInput {
  index: number;
  name: string;
  mac: Buffer;
  noarp: boolean;
  ipv4: Buffer[];
  ipv6: { bytes: Buffer; optimistic: boolean }[];
  /** Planned addresses left out, and why (absent, DAD failed). */
  skipped: string[];
}

/** Who asks from a pod interface over IPv4 (a conflict probe, a gateway check): the interface and its addresses. */
export type AskingInterface = Pick<RoundInput, 'index' | 'name' | 'mac' | 'ipv4'>;

/** The readiness of one interface at one moment. */
export type Snapshot =
  | { state: 'ready'; input: RoundInput }
  | { state: 'waiting'; reasons: string[] }
  | { state: 'gone' };

const PORT_STATE_NAMES = ['disabled', 'listening', 'learning', 'forwarding', 'blocking'];

/**
 * Whether the interface may be announced: link up with carrier, bridge port forwarding, no planned IPv6 address
 * tentative (absent or DAD-failed ones never are).
 */
export function snapshot(pod: Rtnl, host: Rtnl, iface: ResolvedInterface, target: AnnounceTarget): Snapshot {
  const link = pod.linkByIndex(iface.index);
  if (!link || link.name !== iface.name) return { state: 'gone' };
  const reasons: string[] = [];
  if (!link.up) reasons.push(`${iface.name} is down`);
  else if (!link.running) reasons.push(`${iface.name} has no carrier`);
  if (iface.hostPeer) {
    const state = host.bridgePortState(iface.hostPeer.index);
    if (state !== undefined && state !== PortState.Forwarding) {
      reasons.push(`bridge port ${iface.hostPeer.name} is ${PORT_STATE_NAMES[state] ?? `in state ${state}`}`);
    }
  }
  const present = pod.addresses(iface.index);
  const skipped: string[] = [];
  const ipv4: Buffer[] = [];
  for (const text of target.ipv4) {
    const bytes = parseIPv4(text);
    if (present.some((a) => a.bytes.equals(bytes))) ipv4.push(bytes);
    else skipped.push(`${text} (not on ${iface.name})`);
  }
  const ipv6: RoundInput['ipv6'] = [];
  for (const text of target.ipv6) {
    const bytes = parseIPv6(text);
    const found = present.find((a) => a.bytes.equals(bytes));
    if (!found) skipped.push(`${text} (not on ${iface.name})`);
    else if (found.dadFailed) skipped.push(`${text} (duplicate address detection failed)`);
    else if (found.tentative) reasons.push(`${text} is tentative (DAD in progress)`);
    else ipv6.push({ bytes, optimistic: found.optimistic });
  }
  if (reasons.length > 0) return { state: 'waiting', reasons };
  if (link.mac?.length !== 6) return { state: 'waiting', reasons: [`${iface.name} has no Ethernet address`] };
  return {
    state: 'ready',
    input: { index: iface.index, name: iface.name, mac: link.mac, noarp: link.noarp, ipv4, ipv6, skipped },
  };
}

/** Readiness of every target right now: ready (with what to send), one gone, or why to wait. */
export type Readiness =
  | { kind: 'ready'; inputs: RoundInput[] }
  | { kind: 'gone'; name: string }
  | { kind: 'waiting'; reasons: string[] };

/** How a readiness wait ended: as the last look said, or timed out with its reasons. */
export type ReadyOutcome = Exclude<Readiness, { kind: 'waiting' }> | { kind: 'timeout'; reasons: string[] };

/**
 * Waits (through `waits`) on rtnetlink notifications until every target interface is ready, one is gone, or `timeoutMs`
 * passes; `onWait` hears why, once, when the first look says wait. Never polls on a timer of its own: the event
 * sockets listen from the session's start (they queue what arrives meanwhile), so that no change slips between a look
 * and the next wait.
 */
export async function waitReady(
  session: PodSession,
  targets: readonly PodTarget[],
  wait: { timeoutMs: number; timers: Timers; waits: Waits; onWait?: (reasons: readonly string[]) => void },
): Promise<ReadyOutcome> {
  const deadline = wait.timers.now() + wait.timeoutMs;
  for (let looks = 0; ; looks++) {
    const now = readiness(session, targets);
    if (now.kind !== 'waiting') return now;
    if (looks === 0) wait.onWait?.(now.reasons);
    const left = deadline - wait.timers.now();
    if (left <= 0) return { kind: 'timeout', reasons: now.reasons };
    await wait.waits.readable(session.eventFds, left);
    session.drainEvents();
  }
}

/** Readiness of every target right now. */
export function readiness(session: PodSession, targets: readonly PodTarget[]): Readiness {
  const inputs: RoundInput[] = [];
  const reasons: string[] = [];
  for (const t of targets) {
    const s = snapshot(session.pod.rtnl, session.host.rtnl, t.iface, t);
    if (s.state === 'gone') return { kind: 'gone', name: t.name };
    if (s.state === 'waiting') reasons.push(...s.reasons);
    else inputs.push(s.input);
  }
  return reasons.length === 0 ? { kind: 'ready', inputs } : { kind: 'waiting', reasons };
}
