// Pure: one attachment as `announcer status` shows it, while its work runs and
// once it is over (then only its gateway verdict is left to show).
import type { AttachmentIds, BackgroundJob } from '../announce/background-job';
import type { GatewayVerdict } from '../announce/gateway-verdict';
import type { AttachmentStatus } from './protocol';
import type { Work } from './rounds';

/** An attachment with work: where its burst stands, and its gateway check. */
export function workStatus(w: Work, now: number): AttachmentStatus {
  return {
    ...idsOf(w.job),
    ...(w.dueAt !== undefined && !w.deferred ? { nextRoundInMs: Math.max(0, Math.round(w.dueAt - now)) } : {}),
    roundsSent: w.roundsSent,
    roundsPlanned: w.job.schedule.length,
    deferred: w.deferred !== undefined,
    ...(w.gateway ? { gateway: w.gateway.verdict } : {}),
  };
}

/** An attachment whose work is over (or never was), shown for its gateway verdict. */
export function settledStatus(
  ids: AttachmentIds & Partial<Pick<BackgroundJob, 'schedule'>> & { job?: BackgroundJob | undefined },
  gateway: GatewayVerdict,
  roundsSent?: number,
): AttachmentStatus {
  const planned = ids.schedule?.length ?? ids.job?.schedule.length ?? 1;
  return { ...idsOf(ids), roundsSent: roundsSent ?? planned, roundsPlanned: planned, deferred: false, gateway };
}

function idsOf(ids: AttachmentIds): Pick<AttachmentStatus, 'network' | 'containerId' | 'ifname' | 'netns'> {
  return { network: ids.network, containerId: ids.containerId, ifname: ids.ifname, netns: ids.netns };
}
