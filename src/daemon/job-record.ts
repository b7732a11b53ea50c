// A job as its record holds it: whether the record and the pod still want it,
// and writing back when a deferred round 1 went out. The record, written
// under the attachment's lock by ADD and DEL, is the truth.
import { join } from '../path';
import { netnsIdAt } from '../sys/netns';
import { lockPath, type LockFile } from '../announce/attachment-lock';
import type { BackgroundJob } from '../announce/background-job';
import { readRecordFile, writeRecord, type AttachmentRecord } from '../announce/state';
import type { Counters } from './counters';
import type { CallerView } from '../sys/caller-view';
import { jobView, NO_VIEW } from './job-view';
import type { RoundDeps, Work } from './rounds';

/** Whether two jobs are one ADD's (a new ADD of the attachment writes a new readyDeadline). */
export function sameJob(a: BackgroundJob, b: BackgroundJob): boolean {
  return (
    a.netnsId.dev === b.netnsId.dev &&
    a.netnsId.ino === b.netnsId.ino &&
    a.readyDeadline === b.readyDeadline &&
    a.firstRoundAt === b.firstRoundAt
  );
}

/** Whether the job's netns path, as `view` (its caller's) sees it, still names the netns ADD saw. */
export function netnsAlive(job: BackgroundJob, view: CallerView): boolean {
  let now;
  try {
    now = netnsIdAt(view.path(job.netns));
  } catch {
    return false; // a symlink loop where the netns was
  }
  return now !== undefined && now.dev === job.netnsId.dev && now.ino === job.netnsId.ino;
}

/**
 * Whether the pod is still there and record `w.name` in `stateDir` still holds this very job (DEL, GC or a new ADD end
 * it).
 */
export function stillWanted(deps: Pick<RoundDeps, 'views'> & { stateDir: string }, w: Work): boolean {
  const view = jobView(deps, w.job);
  if (!view) {
    w.log.warn(NO_VIEW, { caller: w.job.caller });
    return false;
  }
  if (!netnsAlive(w.job, view)) return false;
  const read = readRecordFile(join(deps.stateDir, w.name));
  return read.kind === 'ok' && read.record.job !== undefined && sameJob(read.record.job, w.job);
}

/**
 * Writes when a deferred round 1 went out into the record, so that an announcer started after
 * this one (this one killed, the node's runtime restarted) takes the burst up where it stands
 * instead of waiting for the pod again and announcing it once more.
 */
export async function recordFirstRound(deps: RecordDeps, counters: Counters, w: Work): Promise<void> {
  const job = { ...w.job, firstRoundAt: w.firstRoundAt };
  const why = 'cannot record that round 1 went out: an announcer started later would wait for the pod again';
  if (await updateRecord(deps, counters, w, why, (record) => ({ ...record, job }))) w.job = job;
}

/** Writes the gateway check's verdict into the record: status shows it for as long as the attachment lives. */
export async function recordVerdict(deps: RecordDeps, counters: Counters, w: Work): Promise<void> {
  const gateway = w.gateway?.verdict;
  const why = 'cannot record the gateway check: an announcer started later would not show it';
  if (gateway) await updateRecord(deps, counters, w, why, (record) => ({ ...record, gateway }));
}

/** Where records are, and how to lock one. */
export interface RecordDeps {
  stateDir: string;
  lockFile: LockFile;
}

/**
 * Rewrites the record of `w` through `change`, under the attachment's lock and only while the record still holds this
 * very job: an ADD or DEL acting on the attachment right now replaces or removes it anyway. Failures are counted and
 * logged (`why`), never thrown; true when written.
 */
async function updateRecord(
  deps: RecordDeps,
  counters: Counters,
  w: Work,
  why: string,
  change: (record: AttachmentRecord) => AttachmentRecord,
): Promise<boolean> {
  const failed = (err: unknown): false => {
    counters.errors++;
    w.log.warn(why, { error: err });
    return false;
  };
  let lock;
  try {
    lock = await deps.lockFile(lockPath(deps.stateDir, w.job.containerId, w.job.ifname), 0);
  } catch (err) {
    return failed(err);
  }
  if (!lock) return false;
  try {
    const read = readRecordFile(join(deps.stateDir, w.name));
    if (read.kind !== 'ok' || !read.record.job || !sameJob(read.record.job, w.job)) return false;
    writeRecord(deps.stateDir, change(read.record));
    return true;
  } catch (err) {
    return failed(err);
  } finally {
    lock.release();
  }
}
