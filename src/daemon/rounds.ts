// One attachment's work in the announcer's loop: the later rounds of a burst, and the wait for a pod that was not ready
// during ADD (its deferred round 1). Each round takes its frames from the node-wide budget first, then enters the pod's
// netns by path, as the job's caller sees it, and holds nothing between rounds. Only a deferred wait keeps the pod's
// sockets (their event sockets join the loop's poll) until round 1 is out or the wait ends; the budget may hold round
// 1 back, but never drops it. Under conflictCheck, round 1 waits for a probe window first, stepped by the loop.
import { dropConflicting, leaveOutConflicts, withoutConflicts, type AddressConflict } from '../announce/conflict-probe';
import type { BackgroundJob } from '../announce/background-job';
import { SteppedPodProbe } from '../announce/conflict-probe';
import { buildRound, sendFrames, totalFrames, type FrameCounts, type OutgoingFrame } from '../announce/round';
import { inView, openSession, readiness } from '../announce/session';
import type { PodSession, PodTarget, SocketOpener } from '../announce/session';
import type { AttachmentRecord } from '../announce/state';
import type { Logger } from '../log';
import { fileIdAt, sameFile } from '../sys/file-id';
import { attempt } from '../sys/sys-error';
import { addFrames } from './metrics';
import type { Announcer } from './daemon';
import { askAfterRound, type GatewayWork } from './gateway';

/** Deferred waits look at the netns path at least this often while they wait. */
export const CHECK_MS = 500;

/**
 * How late a round of a job ADD just left, or of a burst another announcer handed over, may still go out (ADD's end,
 * or the change of announcers, may come after it fell due); an older one is skipped, never sent late in a burst.
 */
export const LATE_GRACE_MS = 1000;

/** Why a job whose caller's view cannot be had again (after a hand-over or a kill) is skipped. */
export const NO_VIEW =
  "the caller's view of the file system cannot be re-opened (its mount namespace is neither this announcer's, " +
  'nor one it holds, nor that of any process it can see): skipping the burst';

/** One attachment's work: where its burst stands, or its wait for the pod. */
export interface Work {
  /** The record's file name in stateDir. */
  name: string;
  job: BackgroundJob;
  /** The MACs to put back on DEL, as the record has them: the journal is written from the table. */
  originalMacs: AttachmentRecord['originalMacs'];
  log: Logger;
  /** Index of the next round; schedule.length when done. */
  next: number;
  dueAt: number | undefined;
  roundsSent: number;
  /** A delayed round was counted once as delayed. */
  delayed: boolean;
  /**
   * While waiting for a pod that was not ready at ADD; `probe` while its window runs and `conflicts` once the pod was
   * probed (conflictCheck).
   */
  deferred?: { open?: OpenPod; checkAt: number; probe?: SteppedPodProbe; conflicts?: AddressConflict[] };
  /** The gateway check, while it runs and once it has a verdict (absent: off, or nothing routed). */
  gateway?: GatewayWork;
}

/** The work is over; `why` is logged when there is one. */
export type Ended = { why: string | undefined };

/** An open pod: its sockets, the job's interfaces in it, and the opener in its caller's view. */
export interface OpenPod {
  session: PodSession;
  targets: PodTarget[];
  open: SocketOpener;
}

/** A pod entered, or why it cannot be. */
export type PodVisit = OpenPod | { gone: string };

/** a.open with the job's paths as its caller saw them; undefined when that view cannot be had again. */
function jobOpener(a: Announcer, job: BackgroundJob): SocketOpener | undefined {
  const view = a.views.forRecorded(job.caller);
  return view && inView(a.open, view);
}

/** Whether the pod of `w` is still there: its caller's view can be had, and the netns path names the netns ADD saw. */
export function podThere(a: Announcer, w: Work): boolean {
  const view = a.views.forRecorded(w.job.caller);
  if (!view) {
    w.log.warn(NO_VIEW, { caller: w.job.caller });
    return false;
  }
  // A symlink loop where the netns was: gone.
  return attempt(() => sameFile(fileIdAt(view.path(w.job.netns)), w.job.netnsId)) ?? false;
}

/**
 * Opens the pod's sockets and resolves the job's interfaces; gone when the caller's view or the netns cannot be had,
 * or an interface is gone. Its callers check the netns path first (podThere).
 */
export function openForJob(a: Announcer, job: BackgroundJob): PodVisit {
  const open = jobOpener(a, job);
  if (!open) return { gone: NO_VIEW };
  let session: PodSession;
  try {
    const names = job.interfaces.map((i) => i.name);
    session = openSession({ open, closeInBackground: a.closeInBackground }, job.netns, names, job.hostPeerNames);
  } catch (err) {
    return { gone: `cannot enter pod netns: ${(err as Error).message}` };
  }
  return visitOf(a, session, job, open);
}

/** The job's interfaces in an open session; gone (and the session closed) when one of them is missing. */
export function visitOf(a: Announcer, session: PodSession, job: BackgroundJob, open?: SocketOpener): PodVisit {
  const opener = open ?? jobOpener(a, job);
  const targets = job.interfaces.map((t) => ({ ...t, iface: session.interfaces.find((r) => r.name === t.name) }));
  const missing = targets.find((t) => !t.iface);
  if (missing || !opener) {
    session.close();
    return { gone: missing ? `pod interface ${missing.name} gone` : NO_VIEW };
  }
  return { session, targets: targets as OpenPod['targets'], open: opener };
}

/** Looks at an open pod: the frames to send when ready (the session stays open for sending). */
function look(open: OpenPod, job: BackgroundJob, log: Logger) {
  const now = readiness(open.session, open.targets);
  if (now.kind === 'gone') return { gone: `pod interface ${now.name} gone` };
  if (now.kind === 'waiting') return now;
  return { kind: 'ready' as const, frames: buildRound(now.inputs, job.arpOps, open.session.pod.ipv6Forwarding, log) };
}

/**
 * The next round at `now` from round `from` on, skipping those due over `graceMs` ago (index schedule.length: none
 * left); recovered work has no grace.
 */
export function nextRound(
  schedule: readonly number[],
  firstRoundAt: number,
  from: number,
  now: number,
  graceMs = LATE_GRACE_MS,
): { index: number; dueAt: number | undefined; skipped: number } {
  let index = Math.max(from, 1);
  let skipped = 0;
  while (index < schedule.length && firstRoundAt + schedule[index]! < now - graceMs) {
    index++;
    skipped++;
  }
  return { index, dueAt: index < schedule.length ? firstRoundAt + schedule[index]! : undefined, skipped };
}

/** Moves to the next round still worth sending; ended when the burst is over. */
export function advance(a: Announcer, w: Work, now: number): Ended | undefined {
  const { index, dueAt, skipped } = nextRound(w.job.schedule, w.job.firstRoundAt!, w.next, now);
  if (skipped > 0) {
    a.counters.rounds.skippedLate += skipped;
    w.log.info('rounds skipped: their time has passed', { skipped });
  }
  w.next = index;
  w.dueAt = dueAt;
  w.delayed = false;
  return dueAt === undefined ? { why: undefined } : undefined;
}

function roundSent(a: Announcer, w: Work, sent: FrameCounts): void {
  addFrames(a.counters, sent);
  a.counters.rounds.sent++;
  w.roundsSent++;
}

/** The frames a round of `job` sends at most: what it takes from the budget before it opens the pod's sockets. */
function plannedFrames(job: BackgroundJob): number {
  return job.interfaces.reduce((n, i) => n + i.ipv4.length * job.arpOps.length + i.ipv6.length, 0);
}

/**
 * Sends the round that is due at `now` (a pod not ready for it skips it; `wanted` says whether it is still there).
 * The budget is asked first, for the most the round can send: a round held back has opened nothing, so waiting costs
 * no socket and no close.
 */
export function runRound(a: Announcer, w: Work, now: number, wanted: () => boolean): Ended | undefined {
  const taken = a.frameBudget.later.take(plannedFrames(w.job), a.timers.bootMs());
  if (!taken.ok) return heldBack(a, w, now, taken.waitMs);
  // Whether the pod is still there (a stat) only once the budget lets the round go: rounds held back wait in the
  // same turn by the hundred.
  if (!wanted()) return { why: 'pod gone or work ended' };
  const opened = openForJob(a, w.job);
  if ('gone' in opened) return { why: opened.gone };
  try {
    const seen = look(opened, w.job, w.log);
    if ('gone' in seen) return { why: seen.gone };
    if (seen.kind === 'waiting') {
      a.counters.rounds.skippedNotReady++;
      w.log.info('pod not ready for this round: skipping it', { round: w.next + 1, waitingFor: seen.reasons });
    } else {
      const sent = sendFrames(opened.session.pod.packet, seen.frames, w.log);
      roundSent(a, w, sent);
      askAfterRound(w, now);
      w.log.info('announced', { round: w.next + 1, of: w.job.schedule.length, frames: totalFrames(sent) });
    }
  } catch (err) {
    a.counters.errors++;
    w.log.error('round failed', { round: w.next + 1, error: err });
  } finally {
    opened.session.close();
  }
  w.next++;
  return advance(a, w, now);
}

/** The budget held a later round back: it waits its turn, or is dropped once the next round is due. */
function heldBack(a: Announcer, w: Work, now: number, waitMs: number): Ended | undefined {
  const following = w.next + 1 < w.job.schedule.length ? w.job.firstRoundAt! + w.job.schedule[w.next + 1]! : Infinity;
  if (now + waitMs < following) {
    if (!w.delayed) a.counters.rateLimited.delayed++;
    w.delayed = true;
    w.dueAt = now + waitMs;
    return undefined;
  }
  a.counters.rateLimited.dropped++;
  w.log.warn('round dropped: the node-wide rate limit held it until the next one was due', { round: w.next + 1 });
  w.next++;
  return advance(a, w, now);
}

/**
 * Closes the sockets of a deferred wait, if it has them open: a probe's receivers (the window is given up), then the
 * pod's.
 */
export function dropDeferred(w: Work): void {
  const d = w.deferred;
  const open = d?.open;
  const probe = d?.probe;
  if (d) [d.open, d.probe] = [undefined, undefined];
  try {
    probe?.close();
  } finally {
    open?.session.close();
  }
}

/** The fds a deferred wait waits on: its pod's event sockets, and its probe's receivers while it probes. */
export function waitFds(w: Work): number[] {
  const d = w.deferred;
  return [...(d?.open?.session.eventFds ?? []), ...(d?.probe?.fds() ?? [])];
}

/**
 * Looks at a pod that was not ready during ADD, and sends round 1 once it is; never dropped, it waits for the budget
 * until the ready deadline, then goes on credit.
 */
export function runDeferred(a: Announcer, w: Work, now: number): Ended | undefined {
  const d = w.deferred!;
  d.checkAt = now + CHECK_MS;
  // The pod's sockets, opened at the first look, stay open for the wait.
  const opened = d.open ?? openForJob(a, w.job);
  if (!('gone' in opened)) d.open = opened;
  const seen = 'gone' in opened ? opened : look(opened, w.job, w.log);
  if ('gone' in seen) {
    a.counters.deferred.gone++;
    return { why: seen.gone };
  }
  if (seen.kind === 'waiting') {
    if (now < w.job.readyDeadline) return undefined;
    a.counters.deferred.timedOut++;
    w.log.warn('pod never became ready: not announcing', { waitingFor: seen.reasons });
    return { why: 'ready timeout' };
  }
  const frames = probeDeferred(a, w, seen.frames, now);
  if (!frames) return undefined; // probing: back at the probe's next step
  // Held back by the budget, the wait comes back here with the same session: no socket opened or closed per retry.
  const taken = a.frameBudget.later.take(frames.length, a.timers.bootMs(), now >= w.job.readyDeadline);
  if (!taken.ok) {
    if (!w.delayed) a.counters.rateLimited.delayed++;
    w.delayed = true;
    d.checkAt = now + Math.min(taken.waitMs, CHECK_MS);
    return undefined;
  }
  const sent = sendFrames(d.open!.session.pod.packet, frames, w.log);
  dropDeferred(w);
  w.deferred = undefined;
  a.counters.deferred.ready++;
  roundSent(a, w, sent);
  w.log.info('announced', { round: 1, of: w.job.schedule.length, frames: totalFrames(sent), deferred: true });
  w.job = { ...w.job, firstRoundAt: now };
  w.next = 1;
  askAfterRound(w, now, true);
  return advance(a, w, now);
}

/**
 * Probes a deferred round 1 under conflictCheck (`fail` acts as `warn`: ADD has returned), once per wait: a round 1
 * the budget holds back is not probed again. The window is stepped from the loop: undefined while it lasts.
 * Conflicting addresses leave this and later rounds.
 */
function probeDeferred(a: Announcer, w: Work, frames: OutgoingFrame[], now: number): OutgoingFrame[] | undefined {
  const d = w.deferred!;
  const pod = d.open!;
  const check = w.job.conflictCheck;
  if (!check) return frames;
  if (d.conflicts) return withoutConflicts(frames, d.conflicts);
  try {
    const deps = { libc: a.libc, open: pod.open, log: w.log, closeInBackground: a.closeInBackground };
    d.probe ??= SteppedPodProbe.start(deps, pod.session, w.job.netns, frames, check, now);
    if (d.probe && !d.probe.step(now)) {
      d.checkAt = Math.min(d.checkAt, d.probe.wakeAt(now));
      return undefined;
    }
    d.conflicts = d.probe?.finish() ?? [];
  } catch (err) {
    a.counters.errors++;
    w.log.error('conflict probe failed: announcing without it', { error: err });
    d.conflicts = [];
    return frames;
  } finally {
    if (d.conflicts) {
      const probe = d.probe;
      d.probe = undefined;
      probe?.close();
    }
  }
  return applyConflicts(a, w, frames, d.conflicts);
}

/**
 * Logs and counts the conflicts found, takes their addresses out of the job (later rounds), and returns round 1 without
 * them.
 */
function applyConflicts(a: Announcer, w: Work, frames: OutgoingFrame[], conflicts: AddressConflict[]): OutgoingFrame[] {
  if (conflicts.length === 0) return frames;
  if (w.job.conflictCheck?.action === 'fail')
    w.log.warn('conflictCheck is fail, but ADD has returned: leaving the addresses out instead', {
      conflicts: conflicts.length,
    });
  a.counters.conflicts += conflicts.length;
  w.job = { ...w.job, interfaces: dropConflicting(w.job.interfaces, conflicts) };
  return leaveOutConflicts(frames, conflicts, w.log);
}

/**
 * A work threw: a round counts as failed (the next one follows); a deferred wait looks again at its next check, with
 * sockets opened anew, until its ready deadline.
 */
export function afterThrow(a: Announcer, w: Work, now: number, err: unknown): Ended | undefined {
  a.counters.errors++;
  w.log.error('background work failed', { round: w.next + 1, error: err });
  if (!w.deferred) {
    w.next++;
    return advance(a, w, now);
  }
  if (now >= w.job.readyDeadline) return { why: 'failed until its ready deadline' };
  w.deferred.checkAt = now + CHECK_MS;
  attempt(() => dropDeferred(w)); // the sockets are let go of; the throw that brought us here is counted
  return undefined;
}
