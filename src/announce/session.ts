// Sockets into one pod plus the interfaces found there: what ADD and each
// background round work with.
import type { Libc } from '../sys/libc';
import { openHostRtnl, openPodSockets, type PodSockets } from '../sys/netns';
import type { Rtnl } from '../sys/rtnl';
import { resolveInterface, type ResolvedInterface } from './pod-interface';
import { snapshot, type AnnounceTarget, type RoundInput } from './readiness';
import type { Timers } from './timers';
import { waitUntil } from './wait-until';

/** Open sockets into a pod and the host, with the pod interfaces resolved. */
export interface PodSession {
  pod: PodSockets;
  host: Rtnl;
  interfaces: ResolvedInterface[];
  /** Planned interface names that do not exist in the pod. */
  missing: string[];
  close(): void;
}

/** Opens the pod's sockets by path and resolves `names` there (and their host veth peers). */
export async function openSession(libc: Libc, netns: string, names: readonly string[], hostPeerNames: readonly string[]): Promise<PodSession> {
  const pod = openPodSockets(libc, netns);
  let host: Rtnl | undefined;
  try {
    host = openHostRtnl();
    const interfaces: ResolvedInterface[] = [];
    const missing: string[] = [];
    for (const name of names) {
      const found = await resolveInterface(pod.rtnl, host, name, hostPeerNames);
      if (found) interfaces.push(found);
      else missing.push(name);
    }
    const h = host;
    return { pod, host: h, interfaces, missing, close: () => (pod.close(), h.close()) };
  } catch (err) {
    pod.close();
    host?.close();
    throw err;
  }
}

/** How a readiness wait ended. */
export type ReadyOutcome =
  | { kind: 'ready'; inputs: RoundInput[] }
  | { kind: 'timeout'; reasons: string[] }
  | { kind: 'gone'; name: string };

/**
 * Waits, driven by rtnetlink events (pod links and addresses, host links and
 * bridge ports), until every target interface is ready, one is gone, or
 * `timeoutMs` passes. `extraEvents` adds another wake-up source.
 */
export async function waitReady(
  session: PodSession,
  targets: readonly (AnnounceTarget & { iface: ResolvedInterface })[],
  timeoutMs: number,
  timers: Timers,
  extraEvents?: (onEvent: () => void) => () => void,
): Promise<ReadyOutcome> {
  let reasons: string[] = [];
  const outcome = await waitUntil<ReadyOutcome>({
    timeoutMs,
    timers,
    subscribe: (onEvent) => {
      const stops = [
        session.pod.rtnl.watch(['LINK', 'IPV6_IFADDR', 'IPV4_IFADDR'], onEvent),
        session.host.watch(['LINK'], onEvent),
        ...(extraEvents ? [extraEvents(onEvent)] : []),
      ];
      return () => stops.forEach((stop) => stop());
    },
    evaluate: async () => {
      const inputs: RoundInput[] = [];
      reasons = [];
      for (const t of targets) {
        const s = await snapshot(session.pod.rtnl, session.host, t.iface, t);
        if (s.state === 'gone') return { kind: 'gone', name: t.name };
        if (s.state === 'waiting') reasons.push(...s.reasons);
        else inputs.push(s.input);
      }
      return reasons.length === 0 ? { kind: 'ready', inputs } : undefined;
    },
  });
  return outcome ?? { kind: 'timeout', reasons };
}
