// One attachment's work in the background announcer: the later rounds of a
// burst (here), and what a deferred wait for the pod shares with them
// (deferred.ts). Each round takes its frames from the node-wide budget first,
// then re-enters the pod's netns by path, and holds nothing between rounds;
// only a deferred wait keeps the pod's sockets, and it ends once the netns
// path is gone or replaced.
import type { Logger } from '../log';
import type { CallerViews } from '../sys/caller-view';
import type { Libc } from '../sys/libc';
import type { FrameBudget } from '../announce/frame-budget';
import type { AddressConflict } from '../announce/conflict-probe';
import type { SteppedPodProbe } from '../announce/probe-pod';
import {
  buildRound,
  NO_FRAMES,
  sendFrames,
  totalFrames,
  type FrameCounts,
  type OutgoingFrame,
} from '../announce/round';
import { readiness, type PodSession, type SocketOpener } from '../announce/session';
import type { BackgroundJob } from '../announce/background-job';
import type { AttachmentRecord } from '../announce/state';
import type { Timers } from '../announce/timers';
import { addFrames, type Counters } from './counters';
import { closeSession, openForJob, type OpenPod } from './pod-visit';
import { nextRound } from './progress';
import { askAfterRound, type GatewayWork } from './gateway-state';

/** Deferred waits look at the netns path at least this often; no poll sleeps longer. */
export const CHECK_MS = 500;

/** One attachment's work: where its burst stands, or its wait for the pod. */
export interface Work {
  /** The record's file name in stateDir. */
  name: string;
  job: BackgroundJob;
  /** The MACs to put back on DEL, as the record has them: the journal is written from the table (job-record.ts). */
  originalMacs: AttachmentRecord['originalMacs'];
  log: Logger;
  firstRoundAt: number | undefined;
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

/** What the rounds need from the process. */
export interface RoundDeps {
  libc: Libc;
  open: SocketOpener;
  /** The views of the file system a job's paths resolve in (by the mount namespace its ADD's caller had). */
  views: Pick<CallerViews, 'forRecorded'>;
  /** Closes a packet socket on another thread: its close waits for an RCU grace period. */
  closeInBackground(fd: number): void;
  /** bootMs() schedules rounds (the clock ADD wrote them in). */
  timers: Timers;
  /** The node-wide frame budget, at the node settings' rateLimit (UNLIMITED without one). */
  budget(): FrameBudget;
}

/** The work is over; `why` is logged when there is one. */
export type Ended = { why: string | undefined };

/** Looks at an open pod: the frames to send when ready (the session stays open for sending). */
export function look(open: OpenPod, job: BackgroundJob, log: Logger) {
  const now = readiness(open.session, open.targets);
  if (now.kind === 'gone') return { kind: 'gone' as const, why: `pod interface ${now.name} gone` };
  if (now.kind === 'waiting') return now;
  return { kind: 'ready' as const, frames: buildRound(now.inputs, job.arpOps, open.session.pod.ipv6Forwarding, log) };
}

/**
 * Closes the sockets of a deferred wait, if it has them open: a probe's receivers (the window is given up), then the
 * pod's.
 */
export function dropDeferred(deps: RoundDeps, w: Work): void {
  const d = w.deferred;
  const open = d?.open;
  const probe = d?.probe;
  if (d) [d.open, d.probe] = [undefined, undefined];
  try {
    probe?.close();
  } finally {
    if (open) closeSession(deps, open.session);
  }
}

/** Sends `frames` through the session once the node-wide budget has them, or says how long to wait. */
export async function sendBudgeted(
  deps: RoundDeps,
  w: Work,
  session: PodSession,
  frames: readonly OutgoingFrame[],
  onCredit: boolean,
) {
  let sent: FrameCounts = NO_FRAMES;
  const taken = await deps.budget().take(
    frames.length,
    () => deps.timers.bootMs(),
    onCredit,
    () => {
      sent = sendFrames(session.pod.packet, frames, w.log);
    },
  );
  return taken.ok ? { ok: true as const, sent } : taken;
}

/** Moves to the next round still worth sending; ended when the burst is over. */
export function advance(w: Work, now: number, counters: Counters): Ended | undefined {
  const { index, dueAt, skipped } = nextRound(w.job.schedule, w.firstRoundAt!, w.next, now);
  if (skipped > 0) {
    counters.rounds.skippedLate += skipped;
    w.log.info('rounds skipped: their time has passed', { skipped });
  }
  w.next = index;
  w.dueAt = dueAt;
  w.delayed = false;
  return dueAt === undefined ? { why: undefined } : undefined;
}

export function roundSent(w: Work, sent: FrameCounts, counters: Counters): void {
  addFrames(counters, sent);
  counters.rounds.sent++;
  w.roundsSent++;
}

/** The frames a round of `job` sends at most: what it takes from the budget before it opens the pod's sockets. */
export function plannedFrames(job: BackgroundJob): number {
  return job.interfaces.reduce((n, i) => n + i.ipv4.length * job.arpOps.length + i.ipv6.length, 0);
}

/**
 * Sends the round that is due (a pod not ready for it skips it, `wanted` says whether it is still there); the budget
 * may hold it back, or drop it.
 * The budget is asked first, for the most the round can send: a round held back has opened nothing,
 * so waiting costs no socket and no close (frames the pod then does not send stay taken).
 */
export async function runRound(
  deps: RoundDeps,
  counters: Counters,
  w: Work,
  now: number,
  wanted: () => boolean = () => true,
): Promise<Ended | undefined> {
  const taken = await deps.budget().take(
    plannedFrames(w.job),
    () => deps.timers.bootMs(),
    false,
    () => {},
  );
  if (!taken.ok) return heldBack(w, now, taken.waitMs, counters);
  // Whether the work is still the table's and its pod still there (a stat) only once the budget lets the round go:
  // rounds held back wait in the same turn by the hundred, and their tokens are spent on a pod found gone.
  if (!wanted()) return { why: 'pod gone or work ended' };
  const opened = openForJob(deps, w.job);
  if ('gone' in opened) return { why: opened.gone };
  try {
    const seen = look(opened, w.job, w.log);
    if (seen.kind === 'gone') return { why: seen.why };
    if (seen.kind === 'waiting') {
      counters.rounds.skippedNotReady++;
      w.log.info('pod not ready for this round: skipping it', { round: w.next + 1, waitingFor: seen.reasons });
    } else {
      const sent = sendFrames(opened.session.pod.packet, seen.frames, w.log);
      roundSent(w, sent, counters);
      askAfterRound(w, now);
      w.log.info('announced', { round: w.next + 1, of: w.job.schedule.length, frames: totalFrames(sent) });
    }
  } catch (err) {
    counters.errors++;
    w.log.error('round failed', { round: w.next + 1, error: err });
  } finally {
    closeSession(deps, opened.session);
  }
  w.next++;
  return advance(w, now, counters);
}

/** The budget held a later round back: it waits its turn, or is dropped once the next round is due. */
function heldBack(w: Work, now: number, waitMs: number, counters: Counters): Ended | undefined {
  const following = w.next + 1 < w.job.schedule.length ? w.firstRoundAt! + w.job.schedule[w.next + 1]! : Infinity;
  if (now + waitMs < following) {
    if (!w.delayed) counters.rateLimited.delayed++;
    w.delayed = true;
    w.dueAt = now + waitMs;
    return undefined;
  }
  counters.rateLimited.dropped++;
  w.log.warn('round dropped: the node-wide rate limit held it until the next one was due', { round: w.next + 1 });
  w.next++;
  return advance(w, now, counters);
}
