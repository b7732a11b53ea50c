// Sockets into one pod plus the interfaces found there: what ADD and each
// background round work with.
import type { FrameReceiver } from '../sys/packet-socket';
import type { CallerView } from '../sys/caller-view';
import type { Libc } from '../sys/libc';
import { openReceivers, openHostSockets, openPodSockets, type HostSockets, type PodSockets } from '../sys/netns';
import { resolveInterface, type ResolvedInterface } from './pod-interface';
import { snapshot, type AnnounceTarget, type RoundInput } from './readiness';
import type { Timers, Waits } from './context';

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

/** Opens the pod's sockets by path and resolves `names` there (and their host veth peers). */
export function openSession(
  { open }: { open: SocketOpener },
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
      close: () => (pod.close(), h.close()),
    };
  } catch (err) {
    pod.close();
    host?.close();
    throw err;
  }
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
  targets: readonly (AnnounceTarget & { iface: ResolvedInterface })[],
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
export function readiness(
  session: PodSession,
  targets: readonly (AnnounceTarget & { iface: ResolvedInterface })[],
): Readiness {
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
