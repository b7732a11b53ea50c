// A work of the table and its record. The announcer alone writes records, and the table holds what they say for every
// attachment with work, so the table is the truth while the announcer runs: a round asks the table, never the file.
// The record is the journal, written from the table whenever it changes (a deferred round 1 gone out, a gateway
// verdict), and read back only at the announcer's start (recovery).
import { fileIdAt, sameFile } from '../sys/file-id';
import { lockPath, type LockFile } from '../announce/attachment-lock';
import type { BackgroundJob } from '../announce/background-job';
import type { RecordMemory } from '../announce/record-memory';
import { writeRecord, type AttachmentRecord } from '../announce/state';
import type { Counters } from './counters';
import type { CallerView } from '../sys/caller-view';
import { jobView, NO_VIEW } from './job-view';
import type { RoundDeps, Work } from './rounds';

/** Whether two jobs are one ADD's (a new ADD of the attachment writes a new readyDeadline). */
export function sameJob(a: BackgroundJob, b: BackgroundJob): boolean {
  return sameFile(a.netnsId, b.netnsId) && a.readyDeadline === b.readyDeadline && a.firstRoundAt === b.firstRoundAt;
}

/** Whether the job's netns path, as `view` (its caller's) sees it, still names the netns ADD saw. */
export function netnsAlive(job: BackgroundJob, view: CallerView): boolean {
  let now;
  try {
    now = fileIdAt(view.path(job.netns));
  } catch {
    return false; // a symlink loop where the netns was
  }
  return sameFile(now, job.netnsId);
}

/** Whether the pod of `w` is still there: its caller's view can be had, and the netns path names the netns ADD saw. */
export function podThere(deps: Pick<RoundDeps, 'views'>, w: Work): boolean {
  const view = jobView(deps, w.job);
  if (!view) {
    w.log.warn(NO_VIEW, { caller: w.job.caller });
    return false;
  }
  return netnsAlive(w.job, view);
}

/** A record with a job: what the table takes. */
export type JobRecord = AttachmentRecord & { job: BackgroundJob };

/** Whether `record` leaves a job for the table. */
export function hasJob(record: AttachmentRecord): record is JobRecord {
  return record.job !== undefined;
}

/** The record of `w` as the table holds it. */
export function recordOf(w: Work): AttachmentRecord {
  const { network, containerId, ifname, netns, netnsId, caller } = w.job;
  const { originalMacs, gateway } = w;
  return { network, containerId, ifname, netns, netnsId, caller, originalMacs, job: w.job, gateway: gateway?.verdict };
}

/**
 * Notes that a deferred round 1 went out, and journals it, so that an announcer started after this one (this one
 * killed, the node's runtime restarted) takes the burst up where it stands instead of waiting for the pod again and
 * announcing it once more.
 */
export async function recordFirstRound(deps: RecordDeps, counters: Counters, w: Work): Promise<void> {
  w.job = { ...w.job, firstRoundAt: w.firstRoundAt };
  await journal(
    deps,
    counters,
    w,
    'cannot record that round 1 went out: an announcer started later would wait for the pod again',
  );
}

/** Journals the gateway check's verdict: status shows it for as long as the attachment lives. */
export async function recordVerdict(deps: RecordDeps, counters: Counters, w: Work): Promise<void> {
  if (w.gateway)
    await journal(deps, counters, w, 'cannot record the gateway check: an announcer started later would not show it');
}

/** Where records are, how to lock one (as ADD and DEL do), and whether the table still holds a work. */
export interface RecordDeps {
  stateDir: string;
  lockFile: LockFile;
  /** Whether `w` is still the table's work for its record (DEL, GC or a new ADD end it). */
  holds(w: Work): boolean;
  /** What the announcer wrote to each record, shared with its commands. */
  written: RecordMemory;
}

/**
 * Writes the record of `w` from the table, under the attachment's lock and only while the table still holds `w`: an
 * ADD or DEL acting on the attachment right now replaces or removes the record anyway. Failures are counted and logged
 * (`why`), never thrown.
 */
async function journal(deps: RecordDeps, counters: Counters, w: Work, why: string): Promise<void> {
  const failed = (err: unknown): void => {
    counters.errors++;
    w.log.warn(why, { error: err });
  };
  let lock;
  try {
    lock = await deps.lockFile(lockPath(deps.stateDir, w.job.containerId, w.job.ifname), 0);
  } catch (err) {
    return failed(err);
  }
  if (!lock) return;
  try {
    if (deps.holds(w)) writeRecord(deps.stateDir, recordOf(w), deps.written);
  } catch (err) {
    failed(err);
  } finally {
    lock.release();
  }
}
