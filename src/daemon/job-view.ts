// Which view of the file system a job's paths resolve in, once its caller may be gone: the one its ADD's caller had,
// found again by the mount namespace the job recorded (CallerViews.forRecorded).
import { inView, type SocketOpener } from '../announce/session';
import type { BackgroundJob } from '../announce/background-job';
import type { CallerView } from '../sys/caller-view';
import type { RoundDeps } from './rounds';

/** Why a job whose caller's view cannot be had again (after a hand-over or a kill) is skipped. */
export const NO_VIEW =
  "the caller's view of the file system cannot be re-opened (its mount namespace is neither this announcer's, " +
  'nor one it holds, nor that of any process it can see): skipping the burst';

/** The job's caller's view (CallerViews.forRecorded), or undefined when it cannot be had again. */
export function jobView(deps: Pick<RoundDeps, 'views'>, job: BackgroundJob): CallerView | undefined {
  return deps.views.forRecorded(job.caller);
}

/** deps.open with the job's paths as its caller sees them; undefined when its view cannot be had again. */
export function jobOpener(deps: RoundDeps, job: BackgroundJob): SocketOpener | undefined {
  const view = jobView(deps, job);
  return view && inView(deps.open, view);
}
