// The chaos schedule: every fault kind at least `minimum` times, in an order and with gaps drawn from the run's seed,
// then more faults drawn at random until the run's time is up. Faults run one after another; one that could not act
// as intended is tried again. Past the hard end, the schedule stops whatever it still owes (the report says so).
import { FAULT_KINDS, type FaultKind, type FaultPlan, type FaultRecord, type Moment } from './model';
import { type ChaosContext, sigkill, sigstop, sigterm } from './faults';
import { idleExit, residentReplaced, upgrade } from './faults-phases';
import { rngFor, type Rng } from './rng';
import { pause } from './time';

/** What the schedule runs with, besides the faults' context. */
export interface ScheduleOptions {
  seed: number;
  minimum: number;
  /** Wall clock ms after which no fault beyond the minimum starts, and after which none at all does. */
  endsAt: number;
  hardEndsAt: number;
  record(fault: FaultRecord): void;
  /** A step of the soak's own that failed. */
  problem(text: string): void;
}

/** The order the minimum faults come in. */
export function owedFaults(rng: Rng, minimum: number): FaultKind[] {
  return rng.shuffle(FAULT_KINDS.flatMap((kind) => Array.from({ length: minimum }, () => kind)));
}

/** The next step's plan: every number drawn, whatever the step turns out to need. */
export function drawPlan(rng: Rng): FaultPlan {
  return {
    gapMs: rng.int(5, 25) * 100,
    extra: rng.pick(FAULT_KINDS),
    moment: rng.pick<Moment>(['any time', 'a call in flight', 'a call in flight', 'an ADD in flight']),
    holdMs: rng.int(5, 60) * 100,
    race: rng.chance(0.5),
    lateMs: rng.int(0, 6) * 100,
    serveMs: rng.int(20, 50) * 100,
  };
}

/** Runs the schedule until the minimum is met and the time is up (or the hard end, or an abort). */
export async function runChaos(ctx: ChaosContext, opts: ScheduleOptions): Promise<void> {
  const rng = rngFor(opts.seed, 'chaos');
  const owed = owedFaults(rng, opts.minimum);
  let idleDone = 0;
  let residents = 0;
  while (!ctx.signal.aborted && Date.now() < opts.hardEndsAt && (owed.length > 0 || Date.now() < opts.endsAt)) {
    const plan = drawPlan(rng);
    await pause(plan.gapMs, ctx.signal);
    if (ctx.signal.aborted) break;
    const kind = owed[0] ?? plan.extra;
    const at = Date.now();
    let fault: FaultRecord;
    try {
      if (kind === 'SIGTERM') fault = await sigterm(ctx, plan);
      else if (kind === 'SIGKILL') fault = await sigkill(ctx, plan);
      else if (kind === 'SIGSTOP') fault = await sigstop(ctx, plan);
      else if (kind === 'idle exit') fault = await idleExit(ctx, plan, idleDone === 0);
      else if (kind === 'upgrade') fault = await upgrade(ctx, plan);
      else fault = await residentReplaced(ctx, plan, ++residents);
    } catch (err) {
      // A step of the soak's own failed (not the announcer): the run fails, saying which.
      const text = `${kind}: ${err instanceof Error ? err.message : String(err)}`;
      opts.problem(text);
      fault = { kind, at, end: Date.now(), counted: false, detail: `failed: ${text}` };
    }
    if (fault.kind === 'idle exit' && fault.counted) idleDone++;
    opts.record(fault);
    if (fault.counted && owed[0] === kind) owed.shift();
  }
}
