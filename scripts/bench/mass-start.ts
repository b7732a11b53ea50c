// make bench-mass: many pods starting at once. N pods on
// one bridge (the real bridge plugin, then the announcer, as a runtime chains
// them), all ADDed at once with default bursts:
//   - the background work once every ADD has returned: process count and PSS
//     (one process now: the node's announcer of the stateDir);
//   - node CPU per pod cycle (bridge ADD + announcer ADD + the announcer's
//     later rounds + announcer DEL + bridge DEL) against the same churn with
//     the bridge plugin alone, interleaved: the CPU of the processes the
//     bench runs (its reaped children's, and the announcer's own), not the
//     machine's, so other load on the node does not count; against the
//     runtime floor's CPU for one run (N floor runs at once, measured so);
//   - the announcer's own CPU per pod cycle (its utime + stime, read before it
//     exits idle), the rest of the share being the shims'.
// Root only; everything is removed on exit, failure or signal.
//
//   BENCH_PODS=N    pods (default 40)    BENCH_CYCLES=N   churn cycles of each kind (default 3)
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NODE_SETTINGS_FILE } from '../../src/state-files';
import { createBridge } from '../../test/integration/harness/bridge';
import {
  ANNOUNCER,
  BRIDGE_PLUGIN,
  bridgeConfig,
  chainConfig,
  cniExec,
  type CniOutput,
} from '../../test/integration/harness/cni';
import { allocSubnet, uniqueName } from '../../test/integration/harness/names';
import { createNetns, type Netns } from '../../test/integration/harness/netns';
import type { Scope } from '../../test/integration/harness/scope';
import { scopedMain } from '../shared/scoped-main';
import { announcersOf, announcerUsage, findAnnouncer, stopAnnouncer } from './announcer-proc';
import { cpuVerdict } from './budgets';
import { loadLine } from './machine';
import { cleanEnv } from './measure';
import { renderVerdicts } from './report';
import { buildRuntimeFloor } from './runtime-floor';
import { median } from './stats';

const PODS = Number(process.env.BENCH_PODS ?? 40);
const CYCLES = Number(process.env.BENCH_CYCLES ?? 3);
/**
 * Long enough to outlive the wait between the ADDs and the DELs; the announcer's exit after the DELs is part of the
 * cycle.
 */
const IDLE_EXIT_MS = 3000;
/** Issue 11's and 18's budgets. */
const PSS_BUDGET_MIB = 60;
const PROCESS_BUDGET = 1;
const TICK_MS = 1000 / 100; // USER_HZ

interface Pod {
  netns: Netns;
  containerId: string;
  ip: string;
}

/** One churn's figures. */
interface Churn {
  cpuMs: number;
  background?: { processes: number; pssMiB: number; cpuMs: number; processesLater: number };
}

/**
 * The CPU (ms) of this process's reaped children, theirs included (cutime +
 * cstime, /proc/self/stat fields 16 and 17): every plugin the bench runs and
 * what each runs in turn, not the machine's other load. The announcer is
 * detached (init reaps it): its own CPU is read from its /proc entry.
 */
function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) * TICK_MS;
}

function ok(what: string, out: CniOutput): CniOutput {
  if (out.code !== 0) throw new Error(`${what} failed (${out.code}): ${out.stdout}${out.stderr}`);
  return out;
}

/** Node CPU (ms) of `n` runs of `file` at once, in a clean environment. */
async function floorCpuMs(file: string, n: number): Promise<number> {
  const before = childrenCpuMs();
  await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<void>((resolve, reject) => {
          spawn(file, [], { env: cleanEnv(), stdio: 'ignore' })
            .once('error', reject)
            .once('exit', () => resolve());
        }),
    ),
  );
  return childrenCpuMs() - before;
}

/** The pods, their bridge, and the calls of one churn. */
async function setUp(scope: Scope, stateDir: string) {
  const net = allocSubnet();
  const bridge = await createBridge(scope, { v4Cidr: net.v4Cidr(1), prefix: 'bmas' });
  const pods: Pod[] = [];
  for (let i = 0; i < PODS; i++)
    pods.push({ netns: await createNetns(scope, 'bmas'), containerId: uniqueName('bmas-'), ip: net.v4Cidr(10 + i) });
  const bridgeConf = (p: Pod) => bridgeConfig({ bridge, ip: p.ip, gw: net.v4(1), name: 'bench-mass' });
  const call = (p: Pod, command: 'ADD' | 'DEL') => ({
    command,
    containerId: p.containerId,
    netns: p.netns.path,
    ifname: 'eth0',
  });
  // The node settings of the stateDir (as `announcer install --state-dir` writes them).
  mkdirSync(stateDir, { mode: 0o700 });
  writeFileSync(join(stateDir, NODE_SETTINGS_FILE), JSON.stringify({ idleExitMs: IDLE_EXIT_MS }), { mode: 0o600 });
  const announcerConf = { type: 'announcer', stateDir };
  return { pods, bridgeConf, call, announcerConf };
}

/** One churn: every pod ADDed at once, then (after the bursts) DELed at once, then the announcer's idle exit. */
async function churn(
  setup: Awaited<ReturnType<typeof setUp>>,
  stateDir: string,
  withAnnouncer: boolean,
): Promise<Churn> {
  const { pods, bridgeConf, call, announcerConf } = setup;
  const before = childrenCpuMs();
  const results = await Promise.all(
    pods.map(async (p) => {
      const prev = ok('bridge ADD', await cniExec(BRIDGE_PLUGIN, call(p, 'ADD'), bridgeConf(p))).json;
      if (withAnnouncer)
        ok('announcer ADD', await cniExec(ANNOUNCER, call(p, 'ADD'), chainConfig(bridgeConf(p), announcerConf, prev)));
      return prev;
    }),
  );
  const procs = withAnnouncer ? announcersOf(stateDir) : [];
  const pssKiB = procs.reduce((sum, p) => sum + (announcerUsage(p)?.pssKiB ?? 0), 0);
  if (withAnnouncer) await sleep(2500); // the default burst: rounds at +1 s and +2 s
  const processesLater = announcersOf(stateDir).length;
  await Promise.all(
    pods.map(async (p, i) => {
      if (withAnnouncer)
        ok(
          'announcer DEL',
          await cniExec(ANNOUNCER, call(p, 'DEL'), chainConfig(bridgeConf(p), announcerConf, results[i])),
        );
      ok('bridge DEL', await cniExec(BRIDGE_PLUGIN, call(p, 'DEL'), bridgeConf(p)));
    }),
  );
  if (!withAnnouncer) return { cpuMs: childrenCpuMs() - before };
  const last = findAnnouncer(stateDir);
  // Read before its idle exit (IDLE_EXIT_MS after the DELs), which it spends asleep.
  const cpuMs = (last && announcerUsage(last)?.cpuMs) ?? Number.NaN;
  for (let i = 0; i < 100 && findAnnouncer(stateDir) !== undefined; i++) await sleep(100);
  return {
    cpuMs: childrenCpuMs() - before + cpuMs,
    background: { processes: procs.length, pssMiB: pssKiB / 1024, cpuMs, processesLater },
  };
}

await scopedMain('bench-mass', async (scope) => {
  if (process.getuid?.() !== 0) throw new Error('make bench-mass needs root');
  const dir = mkdtempSync(join(tmpdir(), 'bench-mass-'));
  scope.defer(() => rmSync(dir, { recursive: true, force: true }), 'bench dir');
  const stateDir = join(dir, 'state');
  scope.defer(() => stopAnnouncer(stateDir), 'the announcer of the bench stateDir');
  const floor = join(dir, 'empty-program');
  buildRuntimeFloor(floor);
  const setup = await setUp(scope, stateDir);
  const bare: number[] = [];
  const full: Churn[] = [];
  const floors: number[] = [];
  for (let c = 0; c < CYCLES; c++) {
    floors.push((await floorCpuMs(floor, PODS)) / PODS);
    bare.push((await churn(setup, stateDir, false)).cpuMs);
    full.push(await churn(setup, stateDir, true));
  }
  const perPod = (median(full.map((f) => f.cpuMs)) - median(bare)) / PODS;
  const worst = full.map((f) => f.background!).reduce((a, b) => (b.pssMiB > a.pssMiB ? b : a));
  const verdict = (okay: boolean): string => (okay ? 'PASS' : 'FAIL');
  console.log(
    `cni-announcer bench-mass: ${PODS} pods at once, default bursts, ` +
      `${CYCLES} interleaved cycles (load average ${loadLine()})`,
  );
  console.log('');
  console.log('| measure | value | budget | verdict |');
  console.log('|---|---|---|---|');
  const most = (pick: (b: NonNullable<Churn['background']>) => number): number =>
    Math.max(...full.map((f) => pick(f.background!)));
  console.log(
    `| announcer processes once every ADD returned (worst cycle) | ${most((b) => b.processes)} | ` +
      `≤ ${PROCESS_BUDGET} | ${verdict(most((b) => b.processes) <= PROCESS_BUDGET)} |`,
  );
  console.log(
    `| their PSS (worst cycle) | ${worst.pssMiB.toFixed(1)} MiB | ≤ ${PSS_BUDGET_MIB} MiB | ` +
      `${verdict(worst.pssMiB <= PSS_BUDGET_MIB)} |`,
  );
  console.log(
    `| announcer processes 2.5 s later, the bursts sent (worst cycle) | ${most((b) => b.processesLater)} | | |`,
  );
  console.log(`| node CPU per pod cycle, bridge alone (median) | ${(median(bare) / PODS).toFixed(1)} ms | | |`);
  console.log(
    `| node CPU per pod cycle, bridge + announcer (median) | ` +
      `${(median(full.map((f) => f.cpuMs)) / PODS).toFixed(1)} ms | | |`,
  );
  console.log(`| the announcer's share per pod cycle (shims + announcer) | ${perPod.toFixed(1)} ms | ≤ 4× floor | |`);
  console.log(
    `| of which the announcer process (median) | ` +
      `${(median(full.map((f) => f.background!.cpuMs)) / PODS).toFixed(1)} ms | | |`,
  );
  console.log(
    `| the runtime floor's CPU for one run (${PODS} at once, median) | ${median(floors).toFixed(1)} ms | | |`,
  );
  console.log('');
  console.log(renderVerdicts([cpuVerdict(perPod, median(floors))]));
  console.log(
    "CPU: the bench's reaped children (cutime + cstime) and the announcer's utime + stime; " +
      'other load on the machine slows them, it does not add to them.',
  );
});
