// A deferred job's round 1 in the background announcer: the wait for a pod
// that was not ready during ADD. The wait keeps the pod's sockets open (their
// event sockets join the announcer's poll) until round 1 is out or the wait
// ends; the budget may hold round 1 back, but never drops it. Under
// conflictCheck, round 1 waits for a probe window first, stepped by the loop:
// its receivers join the poll too, and no other pod waits behind it.
import { describeConflict, dropConflicting, withoutConflicts, type AddressConflict } from '../announce/conflict-probe';
import { SteppedPodProbe } from '../announce/probe-pod';
import { totalFrames, type OutgoingFrame } from '../announce/round';
import type { PodSession } from '../announce/session';
import { jobOpener } from './job-view';
import { openForJob } from './pod-visit';
import { askAfterRound } from './gateway-state';
import type { Counters } from './counters';
import {
  advance,
  CHECK_MS,
  dropDeferred,
  look,
  roundSent,
  sendBudgeted,
  type Ended,
  type RoundDeps,
  type Work,
} from './rounds';

/**
 * Looks at a pod that was not ready during ADD, and sends round 1 once it is; never dropped, it waits for the budget
 * until the ready deadline.
 */
export async function runDeferred(
  deps: RoundDeps,
  counters: Counters,
  w: Work,
  now: number,
): Promise<Ended | undefined> {
  const d = w.deferred!;
  d.checkAt = now + CHECK_MS;
  if (!d.open) {
    const opened = openForJob(deps, w.job);
    if ('gone' in opened) {
      counters.deferred.gone++;
      return { why: opened.gone };
    }
    d.open = opened;
  }
  const seen = look(d.open, w.job, w.log);
  if (seen.kind === 'gone') {
    counters.deferred.gone++;
    return { why: seen.why };
  }
  if (seen.kind === 'waiting') {
    if (now < w.job.readyDeadline) return undefined;
    counters.deferred.timedOut++;
    w.log.warn('pod never became ready: not announcing', { waitingFor: seen.reasons });
    return { why: 'ready timeout' };
  }
  const frames = probeDeferred(deps, counters, w, d.open.session, seen.frames, now);
  if (!frames) return undefined; // probing: back at the probe's next step
  // Held back by the budget, the wait comes back here with the same session: no socket opened or closed per retry.
  const taken = await sendBudgeted(deps, w, d.open.session, frames, now >= w.job.readyDeadline);
  if (!taken.ok) {
    if (!w.delayed) counters.rateLimited.delayed++;
    w.delayed = true;
    d.checkAt = now + Math.min(taken.waitMs, CHECK_MS);
    return undefined;
  }
  dropDeferred(deps, w);
  w.deferred = undefined;
  counters.deferred.ready++;
  roundSent(w, taken.sent, counters);
  w.log.info('announced', { round: 1, of: w.job.schedule.length, frames: totalFrames(taken.sent), deferred: true });
  w.firstRoundAt = now;
  w.next = 1;
  askAfterRound(w, now, true);
  return advance(w, now, counters);
}

/** The fds a deferred wait waits on: its pod's event sockets, and its probe's receivers while it probes. */
export function waitFds(w: Work): number[] {
  const d = w.deferred;
  return [...(d?.open?.session.eventFds ?? []), ...(d?.probe?.fds() ?? [])];
}

/**
 * Probes a deferred round 1 under conflictCheck (`fail` acts as `warn`: ADD has returned), once per
 * wait: a round 1 the budget holds back is not probed again. The window is stepped from the loop:
 * undefined while it lasts. Conflicting addresses leave this and later rounds.
 */
function probeDeferred(
  deps: RoundDeps,
  counters: Counters,
  w: Work,
  session: PodSession,
  frames: OutgoingFrame[],
  now: number,
): OutgoingFrame[] | undefined {
  const d = w.deferred!;
  const check = w.job.conflictCheck;
  if (!check) return frames;
  if (d.conflicts) return withoutConflicts(frames, d.conflicts);
  try {
    const release = (fds: readonly number[]): void => fds.forEach((fd) => deps.closeInBackground(fd));
    const open = jobOpener(deps, w.job);
    if (!open) return frames; // not reached: the wait opened the pod through that view
    d.probe ??= SteppedPodProbe.start({ ...deps, open, log: w.log, release }, session, w.job.netns, frames, check, now);
    if (d.probe && !d.probe.step(now)) {
      d.checkAt = Math.min(d.checkAt, d.probe.wakeAt(now));
      return undefined;
    }
    d.conflicts = d.probe?.finish() ?? [];
  } catch (err) {
    counters.errors++;
    w.log.error('conflict probe failed: announcing without it', { error: err });
    d.conflicts = [];
    return frames;
  } finally {
    if (d.conflicts) closeProbe(d);
  }
  return applyConflicts(counters, w, check.action, frames, d.conflicts);
}

/** Hands off the receivers of a deferred wait's probe, if one is open. */
function closeProbe(d: NonNullable<Work['deferred']>): void {
  const probe = d.probe;
  d.probe = undefined;
  probe?.close();
}

/**
 * Logs and counts the conflicts found, takes their addresses out of the job (later rounds), and returns round 1 without
 * them.
 */
function applyConflicts(
  counters: Counters,
  w: Work,
  action: string,
  frames: OutgoingFrame[],
  conflicts: AddressConflict[],
): OutgoingFrame[] {
  if (conflicts.length === 0) return frames;
  if (action === 'fail')
    w.log.warn('conflictCheck is fail, but ADD has returned: leaving the addresses out instead', {
      conflicts: conflicts.length,
    });
  for (const c of conflicts)
    w.log.warn(`address conflict: not announcing ${describeConflict(c)}`, {
      address: c.address,
      mac: c.mac,
      interface: c.interface,
    });
  counters.conflicts += conflicts.length;
  w.job = { ...w.job, interfaces: dropConflicting(w.job.interfaces, conflicts) };
  return withoutConflicts(frames, conflicts);
}

/**
 * A work threw: a round counts as failed (the next one follows); a deferred wait looks again at its next check, with
 * sockets opened anew, until its ready deadline.
 */
export function afterThrow(deps: RoundDeps, counters: Counters, w: Work, now: number, err: unknown): Ended | undefined {
  counters.errors++;
  w.log.error('background work failed', { round: w.next + 1, error: err });
  if (!w.deferred) {
    w.next++;
    return advance(w, now, counters);
  }
  if (now >= w.job.readyDeadline) return { why: 'failed until its ready deadline' };
  w.deferred.checkAt = now + CHECK_MS;
  try {
    dropDeferred(deps, w);
  } catch {
    // the sockets are let go of; the throw that brought us here is counted
  }
  return undefined;
}
