// The faults of the chaos schedule, each acting on the announcer of the soak's stateDir while the load runs: SIGTERM,
// SIGKILL, SIGSTOP then SIGCONT, an idle exit (the load made quiet), an upgrade to the other build, and a resident
// announcer started, stopped as kubelet stops it and replaced. Each returns what it did; one that could not act as
// intended (no announcer ran, the announcer did not go idle…) is not counted, and the schedule tries it again.
import { processState } from '../../test/integration/harness/held-announcer';
import type { Scope } from '../../test/integration/harness/scope';
import { type AnnouncerPid, type Builds, signalChecked, waitGone, waitServing } from './announcers';
import type { Gate } from './gate';
import type { LogWatch } from './log-watch';
import type { Cycle, FaultKind, FaultPlan, FaultRecord, Moment } from './model';
import { pause, pollUntil } from './time';

/** What the faults act with. */
export interface ChaosContext {
  stateDir: string;
  scope: Scope;
  signal: AbortSignal;
  builds: Builds;
  gate: Gate;
  log: LogWatch;
  /** Pids the soak sent SIGTERM or SIGKILL: their stops are no idle exits. */
  signalled: Set<number>;
  idleExitMs: number;
  /** The DaemonSet's terminationGracePeriodSeconds, in ms. */
  graceMs: number;
  cycles: readonly Cycle[];
  /** The CNI calls running now. */
  inFlight: ReadonlyMap<number, { command: string; start: number }>;
  stopping(): boolean;
}

/** How long a fault waits for an announcer to serve (the load's next call starts one). */
const SERVING_WITHIN_MS = 10_000;
/** How long an announcer SIGTERMed by the soak (not the resident) may take to exit before it is SIGKILLed. */
const TERM_BOUND_MS = 10_000;

export function skipped(kind: FaultKind, at: number, detail: string): FaultRecord {
  return { kind, at, end: Date.now(), counted: false, detail };
}

/**
 * Waits (at most 5 s) for the moment the fault is to meet: a CNI call that has run 30 ms (so it has reached the
 * announcer, or waits in its backlog), or an ADD that has run 150 ms (a deferred pod's, waiting in the announcer for
 * its pod). Where commands are in the announcer's hands is where a stop can lose them.
 */
export async function moment(ctx: ChaosContext, m: Moment): Promise<Moment> {
  if (m === 'any time') return m;
  const [command, ms] = m === 'an ADD in flight' ? ['ADD', 150] : [undefined, 30];
  const meets = (): boolean =>
    [...ctx.inFlight.values()].some(
      (c) => (command === undefined || c.command === command) && Date.now() - c.start >= ms,
    );
  return (await pollUntil(meets, 5000, 5, ctx.signal)) ? m : 'any time';
}

/**
 * The announcer serving now, ours and not the resident, at the moment drawn for the fault; undefined when none came
 * within the bound.
 */
export async function target(ctx: ChaosContext, plan: FaultPlan): Promise<{ a?: AnnouncerPid; when: Moment }> {
  const a = await waitServing(ctx.stateDir, SERVING_WITHIN_MS, ctx.signal);
  if (a === undefined || a.resident) return { when: 'any time' };
  const when = await moment(ctx, plan.moment);
  return { a, when };
}

/** SIGKILL: the announcer dies mid-whatever; the next call starts another, which resumes from the records. */
export async function sigkill(ctx: ChaosContext, plan: FaultPlan): Promise<FaultRecord> {
  const at = Date.now();
  const { a, when } = await target(ctx, plan);
  if (!a) return skipped('SIGKILL', at, 'no announcer served');
  const sent = await signalChecked(ctx.stateDir, a, 'SIGKILL', ctx.signalled);
  const killedAt = Date.now();
  const gone = sent && (await waitGone(a, 5000)) !== undefined;
  const detail = `pid ${a.pid}, at ${when}`;
  return { kind: 'SIGKILL', at: killedAt, end: Date.now(), pid: a.pid, counted: gone, detail, killedAt };
}

/** SIGTERM: the announcer stops; how long it took is measured, and it is SIGKILLed past TERM_BOUND_MS. */
export async function sigterm(ctx: ChaosContext, plan: FaultPlan): Promise<FaultRecord> {
  const at = Date.now();
  const { a, when } = await target(ctx, plan);
  if (!a) return skipped('SIGTERM', at, 'no announcer served');
  if (!(await signalChecked(ctx.stateDir, a, 'SIGTERM', ctx.signalled))) return skipped('SIGTERM', at, 'it left');
  const sentAt = Date.now();
  const goneAt = await waitGone(a, TERM_BOUND_MS);
  const rec: FaultRecord = { kind: 'SIGTERM', at: sentAt, end: Date.now(), pid: a.pid, counted: true, detail: '' };
  if (goneAt === undefined) {
    await signalChecked(ctx.stateDir, a, 'SIGKILL', ctx.signalled);
    rec.killedAt = Date.now();
    await waitGone(a, 5000);
  }
  rec.stopMs = (goneAt ?? Date.now()) - sentAt;
  const killed = rec.killedAt ? ' (SIGKILLed: it did not exit)' : '';
  rec.detail = `pid ${a.pid}, at ${when}: exited after ${rec.stopMs} ms${killed}`;
  rec.end = Date.now();
  return rec;
}

/** SIGSTOP, then SIGCONT after 0.5 to 6 s (under the 10 s after which a call may replace a hung announcer). */
export async function sigstop(ctx: ChaosContext, plan: FaultPlan): Promise<FaultRecord> {
  const at = Date.now();
  const { a, when } = await target(ctx, plan);
  if (!a) return skipped('SIGSTOP', at, 'no announcer served');
  const { holdMs } = plan;
  // The stop's span starts before the signal: a call that ended while it was being sent counts as overlapping it.
  const from = Date.now();
  if (!(await signalChecked(ctx.stateDir, a, 'SIGSTOP', ctx.signalled))) return skipped('SIGSTOP', at, 'it left');
  try {
    await pollUntil(async () => (await processState(a.pid)) === 'T', 2000, 10);
    await pause(holdMs, ctx.signal);
  } finally {
    await signalChecked(ctx.stateDir, a, 'SIGCONT', ctx.signalled);
  }
  const to = Date.now();
  const detail = `pid ${a.pid}, at ${when}, for ${to - from} ms`;
  return { kind: 'SIGSTOP', at: from, end: to, pid: a.pid, counted: true, detail };
}
