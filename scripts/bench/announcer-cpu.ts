// The announcer's own CPU against release 0.2.0's budgets: what one warm ADD (count 1, the default gateway check)
// and that pod's DEL cost it, over the CPU of one run of the runtime floor; and what it spends per second while idle,
// over an idle program built the same way (one long timer). The cycles are read as utime + stime of the whole
// process (threads that exited included), summed over many cycles; the idle seconds as the schedstat run time of
// each thread (nanoseconds: an idle process keeps its threads). Synchronous but for the sleeps; root only, as the
// bench. The idle program is this module's child, ended by its pid.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Verdict } from './report';
import { expectOk, timedRun, type Command } from './measure';

const USER_HZ = 100;
/** The cycles of ADD and DEL summed: the ticks of utime and stime are 10 ms each. */
export const CPU_CYCLES = 60;
/** The runs of the floor summed, for the same reason. */
const FLOOR_RUNS = 100;
/** How long each idle process is watched, once it has settled. */
const IDLE_S = 20;
const SETTLE_MS = 2000;

/** The announcer's CPU budgets, as multiples of their floors. */
export const CPU_BUDGETS = { addDelVsFloorRun: 1.7, idleVsIdleProgram: 1.2 } as const;

/** utime + stime of a process (all its threads, the exited ones too), ms; from a /proc/PID/stat line. */
export function statCpuMs(stat: string, fields: readonly [number, number] = [14, 15]): number {
  // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const field = (n: number): number => Number(rest[n - 3]);
  return ((field(fields[0]) + field(fields[1])) * 1000) / USER_HZ;
}

/** The run time of each live thread of `pid`, ns by tid (the first field of its /proc/PID/task/TID/schedstat). */
function threadsRunNs(pid: number): Map<string, number> {
  const ns = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns.set(tid, Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').split(' ')[0]));
    } catch {
      // The thread exited between the listing and the read.
    }
  }
  return ns;
}

/**
 * The run time, ns, the threads of `after` spent since `before`: a thread's own difference, or all of a thread born
 * meanwhile. A thread that exited meanwhile is left out, never counted below zero; `exited` says how many did.
 */
export function runNsSince(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
): { ns: number; exited: number } {
  let ns = 0;
  for (const [tid, now] of after) ns += now - (before.get(tid) ?? 0);
  return { ns, exited: [...before.keys()].filter((tid) => !after.has(tid)).length };
}

/** The CPU one run of `floor` costs, ms: this process's reaped children's utime + stime over FLOOR_RUNS runs. */
function floorRunCpuMs(floor: Command): number {
  const children = (): number => statCpuMs(readFileSync('/proc/self/stat', 'latin1'), [16, 17]);
  const before = children();
  for (let i = 0; i < FLOOR_RUNS; i++) spawnSync(floor.file, floor.args, { env: floor.env, stdio: 'ignore' });
  return (children() - before) / FLOOR_RUNS;
}

/** The announcer's CPU per ADD + DEL cycle, ms, over CPU_CYCLES cycles. */
async function cycleCpuMs(pid: number, add: Command, del: Command): Promise<number> {
  const cpu = (): number => statCpuMs(readFileSync(`/proc/${pid}/stat`, 'latin1'));
  await sleep(SETTLE_MS);
  const before = cpu();
  for (let i = 0; i < CPU_CYCLES; i++) {
    expectOk('ADD', timedRun(add));
    expectOk('DEL', timedRun(del));
  }
  await sleep(SETTLE_MS);
  return (cpu() - before) / CPU_CYCLES;
}

/** What `pid` spends per second while left alone, ms/s, over IDLE_S seconds once settled. */
async function idleCpuMsPerS(pid: number): Promise<number> {
  await sleep(SETTLE_MS);
  const before = threadsRunNs(pid);
  await sleep(IDLE_S * 1000);
  const { ns, exited } = runNsSince(before, threadsRunNs(pid));
  if (exited > 0) console.log(`pid ${pid}: ${exited} thread(s) exited while idle; their last run time is not counted`);
  return ns / 1e6 / IDLE_S;
}

/** The idle program's idle CPU, ms/s: started here, watched, and ended by its pid. */
async function idleProgramCpuMsPerS(idleProgram: Command): Promise<number> {
  const child = spawn(idleProgram.file, idleProgram.args, { env: idleProgram.env, stdio: 'ignore' });
  try {
    return await idleCpuMsPerS(child.pid!);
  } finally {
    child.kill('SIGKILL');
  }
}

/** The programs and calls the measurement runs. */
export interface CpuSubjects {
  announcerPid: number;
  /** ADD, count 1, on the bench pod; and its DEL. */
  add: Command;
  del: Command;
  runtimeFloor: Command;
  idleProgram: Command;
}

/** Measures both ratios; the announcer must be the warm one of the bench stateDir, with no work left. */
export async function announcerCpu(s: CpuSubjects): Promise<{ lines: string[]; verdicts: Verdict[] }> {
  const floorMs = floorRunCpuMs(s.runtimeFloor);
  const cycleMs = await cycleCpuMs(s.announcerPid, s.add, s.del);
  const idleMs = await idleCpuMsPerS(s.announcerPid);
  const idleFloorMs = await idleProgramCpuMsPerS(s.idleProgram);
  const addDel = cycleMs / floorMs;
  const idle = idleMs / idleFloorMs;
  return {
    lines: [
      `The announcer's CPU per warm ADD count 1 + DEL: ${cycleMs.toFixed(2)} ms (${CPU_CYCLES} cycles); ` +
        `one run of the runtime floor: ${floorMs.toFixed(2)} ms (${FLOOR_RUNS} runs).`,
      `The announcer idle: ${idleMs.toFixed(2)} ms/s; the idle program: ${idleFloorMs.toFixed(2)} ms/s ` +
        `(${IDLE_S} s each).`,
    ],
    verdicts: [
      {
        label: `the announcer's CPU per ADD + DEL ≤ ${CPU_BUDGETS.addDelVsFloorRun}× one floor run`,
        measured: `${addDel.toFixed(2)}×`,
        pass: addDel <= CPU_BUDGETS.addDelVsFloorRun,
      },
      {
        label: `the announcer's idle CPU ≤ ${CPU_BUDGETS.idleVsIdleProgram}× the idle program's`,
        measured: `${idle.toFixed(2)}×`,
        pass: idle <= CPU_BUDGETS.idleVsIdleProgram,
      },
    ],
  };
}
