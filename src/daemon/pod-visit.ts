// Entering a job's pod from the announcer's loop: its sockets opened by the netns path, as the job's caller sees it,
// and its interfaces resolved; or a session ADD opened, taken over by the table (the gateway check's first visit).
import type { BackgroundJob } from '../announce/background-job';
import type { ResolvedInterface } from '../announce/pod-interface';
import type { AnnounceTarget } from '../announce/readiness';
import { openSession, type PodSession } from '../announce/session';
import { jobOpener, NO_VIEW } from './job-view';
import type { RoundDeps } from './rounds';

/** An open pod: its sockets, and the job's interfaces in it (a deferred wait keeps one). */
export interface OpenPod {
  session: PodSession;
  targets: (AnnounceTarget & { iface: ResolvedInterface })[];
}

/** A pod entered, or why it cannot be. */
export type PodVisit = OpenPod | { gone: string };

/**
 * Opens the pod's sockets and resolves the job's interfaces; 'gone' when the caller's view or the netns cannot be had,
 * or an interface is gone. Its callers check the netns path first (Jobs' wanted: job-record.ts's podThere): rounds,
 * deferred waits, and the gateway check's visits of its own.
 */
export function openForJob(deps: RoundDeps, job: BackgroundJob): PodVisit {
  const open = jobOpener(deps, job);
  if (!open) return { gone: NO_VIEW };
  let session: PodSession;
  try {
    session = openSession(
      { open },
      job.netns,
      job.interfaces.map((i) => i.name),
      job.hostPeerNames,
    );
  } catch (err) {
    return { gone: `cannot enter pod netns: ${(err as Error).message}` };
  }
  return visitOf(deps, session, job);
}

/** The job's interfaces in an open session; 'gone' (and the session closed) when one of them is missing. */
export function visitOf(deps: Pick<RoundDeps, 'closeInBackground'>, session: PodSession, job: BackgroundJob): PodVisit {
  const targets = job.interfaces.map((t) => ({ ...t, iface: session.interfaces.find((r) => r.name === t.name) }));
  if (targets.some((t) => !t.iface)) {
    closeSession(deps, session);
    return { gone: `pod interface ${targets.find((t) => !t.iface)!.name} gone` };
  }
  return { session, targets: targets as OpenPod['targets'] };
}

/** Closes a session, its packet socket on another thread. */
export function closeSession(deps: Pick<RoundDeps, 'closeInBackground'>, session: PodSession): void {
  try {
    deps.closeInBackground(session.pod.packet.release());
  } finally {
    session.close();
  }
}
