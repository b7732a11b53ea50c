// The faults that take a phase of the load: an idle exit (the load made quiet until the announcer exits for being
// idle, or released right when it is due to, so its ADDs race the exit), an upgrade to the other build (renamed over
// the installed plugin while the announcer serves: the next call of the new build makes it hand over), and a resident
// announcer (the DaemonSet's) that takes over, is stopped as kubelet stops a pod and is replaced.
import { runningBuild } from '../../test/integration/harness/held-announcer';
import { type Resident, servingAnnouncer, signalChecked, startResident, waitGone, waitServing } from './announcers';
import { type ChaosContext, moment, skipped, target } from './faults';
import type { Cycle, FaultPlan, FaultRecord } from './model';
import { pause, pollUntil } from './time';

/** How long the load may take to go quiet: every worker's pod deleted and the next one waiting at the gate. */
const QUIET_WITHIN_MS = 45_000;

/** When the last DEL the announcer answered had exited: its idle time counts from about then. */
function lastDelServed(cycles: readonly Cycle[]): number {
  return Math.max(0, ...cycles.map((c) => c.delServedAt ?? 0));
}

/** How many idle exits the log shows so far. */
async function idleExitsSoFar(ctx: ChaosContext): Promise<number> {
  await ctx.log.update();
  return ctx.log.idleExits(ctx.signalled).length;
}

/**
 * An idle exit: the gate closes, the load goes quiet, and the announcer, without work, exits after idleExitMs. The
 * first of a run waits for that exit before the gate opens; later ones may instead open it when the exit is due (the
 * last DEL + idleExitMs + 0 to 600 ms), so that the waiting workers' ADDs reach an announcer that is exiting.
 */
export async function idleExit(ctx: ChaosContext, plan: FaultPlan, first: boolean): Promise<FaultRecord> {
  const at = Date.now();
  const before = await idleExitsSoFar(ctx);
  const race = !first && plan.race;
  const { lateMs } = plan;
  ctx.gate.close();
  let how = '';
  try {
    const quiet = await pollUntil(() => ctx.gate.quiet || ctx.stopping(), QUIET_WITHIN_MS, 50, ctx.signal);
    if (!quiet || ctx.stopping()) return skipped('idle exit', at, 'the load did not go quiet');
    const quietMs = Date.now() - at;
    if (race) await pause(lastDelServed(ctx.cycles) + ctx.idleExitMs + lateMs - Date.now(), ctx.signal);
    else await pollUntil(async () => (await idleExitsSoFar(ctx)) > before, ctx.idleExitMs + 10_000, 100, ctx.signal);
    how = race
      ? `quiet after ${quietMs} ms; ADDs released ${lateMs} ms after the exit was due`
      : `quiet after ${quietMs} ms; ADDs released once it had exited`;
  } finally {
    ctx.gate.open();
  }
  if (race) await pause(2000, ctx.signal);
  await ctx.log.update();
  const exits = ctx.log.idleExits(ctx.signalled).slice(before);
  const pids = exits.map((e) => e.pid).join(', ');
  const rec: FaultRecord = { kind: 'idle exit', at, end: Date.now(), counted: exits.length > 0, detail: how };
  rec.detail += exits.length > 0 ? `; pid ${pids} exited idle` : '; no idle exit (the ADDs came first)';
  if (exits[0]) rec.pid = exits[0].pid;
  return rec;
}

/** An upgrade: the other build renamed over the installed plugin while an announcer of the current one serves. */
export async function upgrade(ctx: ChaosContext, plan: FaultPlan): Promise<FaultRecord> {
  const before = Date.now();
  const { a, when } = await target(ctx, plan);
  if (!a) return skipped('upgrade', before, 'no announcer served');
  const from = ctx.builds.installedId;
  await ctx.builds.upgrade();
  const at = Date.now();
  const to = ctx.builds.installedId;
  const goneAt = await waitGone(a, 20_000);
  const next = goneAt === undefined ? undefined : await waitServing(ctx.stateDir, 10_000, ctx.signal);
  const build = next && (await runningBuild(next.pid).catch(() => undefined));
  const rec: FaultRecord = { kind: 'upgrade', at, end: Date.now(), pid: a.pid, counted: false, detail: '' };
  rec.counted = goneAt !== undefined && build === to;
  rec.detail =
    `${from} → ${to} at ${when}: pid ${a.pid} ` +
    (goneAt === undefined ? 'did not exit within 20 s' : `exited ${goneAt - at} ms after the rename`) +
    (next ? `; pid ${next.pid} serves, build ${build ?? '?'}` : '; no announcer served after it');
  return rec;
}

/** SIGTERM as kubelet sends it, SIGKILL after terminationGracePeriodSeconds: how long the stop took. */
async function stopAsKubelet(ctx: ChaosContext, r: Resident): Promise<{ stopMs: number; killedAt?: number }> {
  const sentAt = Date.now();
  await signalChecked(ctx.stateDir, r, 'SIGTERM', ctx.signalled);
  const exitedAt = await Promise.race([r.exited, pause(ctx.graceMs).then(() => undefined)]);
  if (exitedAt !== undefined) return { stopMs: exitedAt - sentAt };
  await signalChecked(ctx.stateDir, r, 'SIGKILL', ctx.signalled);
  const killedAt = Date.now();
  await r.exited;
  return { stopMs: killedAt - sentAt, killedAt };
}

/**
 * The DaemonSet's announcer: started (it asks the serving announcer to hand over and takes its work), serving for 2
 * to 5 s, then stopped as kubelet stops its pod, and replaced by the announcer the load's next call starts.
 */
export async function residentReplaced(ctx: ChaosContext, plan: FaultPlan, n: number): Promise<FaultRecord> {
  const at = Date.now();
  const r = await startResident(ctx.scope, ctx.stateDir, ctx.builds, n);
  const serves = async (): Promise<boolean> => (await servingAnnouncer(ctx.stateDir))?.pid === r.pid;
  const took = await pollUntil(async () => r.hasExited() || (await serves()), 20_000, 100, ctx.signal);
  if (!took || r.hasExited()) {
    await stopAsKubelet(ctx, r);
    return skipped('resident replaced', at, `resident pid ${r.pid} did not take over`);
  }
  const tookMs = Date.now() - at;
  await pause(plan.serveMs, ctx.signal);
  const when = await moment(ctx, plan.moment);
  const stop = await stopAsKubelet(ctx, r);
  const stoppedAt = Date.now();
  let next: number | undefined;
  const replaced = await pollUntil(
    async () => ((next = (await servingAnnouncer(ctx.stateDir))?.pid) ?? r.pid) !== r.pid,
    15_000,
    100,
    ctx.signal,
  );
  const rec: FaultRecord = {
    kind: 'resident replaced',
    at,
    end: Date.now(),
    pid: r.pid,
    counted: replaced,
    detail: '',
  };
  rec.stopMs = stop.stopMs;
  if (stop.killedAt !== undefined) rec.killedAt = stop.killedAt;
  rec.detail =
    `resident pid ${r.pid} took over in ${tookMs} ms; SIGTERM at ${when}: exited after ${stop.stopMs} ms` +
    `${stop.killedAt ? ' (SIGKILLed after the grace period)' : ''}; ` +
    (replaced ? `pid ${next} serves ${Date.now() - stoppedAt} ms later` : 'no announcer replaced it within 15 s');
  return rec;
}
