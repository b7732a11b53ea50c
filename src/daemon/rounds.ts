// One attachment's work in the background announcer: the later rounds of a
// burst, or the wait for a pod that was not ready during ADD. Each round
// re-enters the pod's netns by path and holds nothing between rounds; only a
// deferred wait keeps the pod's sockets (its event sockets join the
// announcer's poll), and it ends once the netns path is gone or replaced.
import type { Logger } from '../log';
import type { Libc } from '../sys/libc';
import { netnsIdAt } from '../sys/netns';
import type { ResolvedInterface } from '../announce/pod-interface';
import type { AnnounceTarget } from '../announce/readiness';
import { buildRound, sendFrames, type FrameCounts, type OutgoingFrame } from '../announce/round';
import { openSession, readiness, type PodSession, type SocketOpener } from '../announce/session';
import type { TailJob } from '../announce/tail-job';

/** The pod sockets and targets of a deferred wait. */
export interface DeferredSession {
  session: PodSession;
  targets: (AnnounceTarget & { iface: ResolvedInterface })[];
}

/** What looking at the pod found. */
export type PodLook =
  | { kind: 'ready'; frames: OutgoingFrame[]; session: PodSession }
  | { kind: 'waiting'; reasons: string[] }
  | { kind: 'gone'; why: string };

/** What the rounds need from the process. */
export interface RoundDeps {
  libc: Libc;
  open: SocketOpener;
  /** Closes a packet socket on another thread: its close waits for an RCU grace period. */
  closeInBackground(fd: number): void;
}

/** Whether the job's netns path still names the netns ADD saw. */
export function netnsAlive(job: TailJob): boolean {
  const now = netnsIdAt(job.netns);
  return now !== undefined && now.dev === job.netnsId.dev && now.ino === job.netnsId.ino;
}

/** Opens the pod's sockets and resolves the job's interfaces; 'gone' when the pod or one interface is. */
export function openForJob(deps: RoundDeps, job: TailJob): DeferredSession | { gone: string } {
  if (!netnsAlive(job)) return { gone: 'pod netns gone' };
  let session: PodSession;
  try {
    session = openSession(
      deps,
      job.netns,
      job.interfaces.map((i) => i.name),
      job.hostPeerNames,
    );
  } catch (err) {
    return { gone: `cannot enter pod netns: ${(err as Error).message}` };
  }
  const targets = job.interfaces.map((t) => ({ ...t, iface: session.interfaces.find((r) => r.name === t.name) }));
  if (targets.some((t) => !t.iface)) {
    closeSession(deps, session);
    return { gone: `pod interface ${targets.find((t) => !t.iface)!.name} gone` };
  }
  return { session, targets: targets as DeferredSession['targets'] };
}

/** Looks at an open pod: the frames to send when ready (the session stays open for sending). */
export function look(open: DeferredSession, job: TailJob, log: Logger): PodLook {
  const now = readiness(open.session, open.targets);
  if (now.kind === 'gone') return { kind: 'gone', why: `pod interface ${now.name} gone` };
  if (now.kind === 'waiting') return now;
  return { kind: 'ready', frames: buildRound(now.inputs, job.arpOps, open.session.pod.ipv6Forwarding, log), session: open.session };
}

/** Sends `frames` through the session's packet socket. */
export function send(session: PodSession, frames: readonly OutgoingFrame[], log: Logger): FrameCounts {
  return sendFrames(session.pod.packet, frames, log);
}

/** Closes a session, its packet socket on another thread. */
export function closeSession(deps: RoundDeps, session: PodSession): void {
  deps.closeInBackground(session.pod.packet.release());
  session.close();
}

