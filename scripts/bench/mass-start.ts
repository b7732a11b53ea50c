// make bench-mass: issue 11's budgets for many pods starting at once. N pods
// on one bridge (the real bridge plugin, then the announcer, as a runtime
// chains them), all ADDed at once with default bursts:
//   - the background work once every ADD has returned: process count and PSS;
//   - node CPU per pod cycle (bridge ADD + announcer ADD + background +
//     announcer DEL + bridge DEL) against the same churn with the bridge
//     plugin alone, interleaved, from /proc/stat (the whole machine: run it on
//     an otherwise idle machine, it says so when it is not).
// Root only; everything is removed on exit, failure or signal.
//
//   BENCH_PODS=N    pods (default 40)    BENCH_CYCLES=N   churn cycles of each kind (default 3)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createBridge } from '../../test/integration/harness/bridge';
import { ANNOUNCER, BRIDGE_PLUGIN, bridgeConfig, chainConfig, cniExec, type CniOutput } from '../../test/integration/harness/cni';
import { allocSubnet, uniqueName } from '../../test/integration/harness/names';
import { createNetns, type Netns } from '../../test/integration/harness/netns';
import { announcerProcesses } from '../../test/integration/harness/processes';
import { Scope } from '../../test/integration/harness/scope';

const PODS = Number(process.env.BENCH_PODS ?? 40);
const CYCLES = Number(process.env.BENCH_CYCLES ?? 3);
const IDLE_EXIT_MS = 1000;
/** Issue 11's budgets. */
const PSS_BUDGET_MIB = 60;
const PROCESS_BUDGET = 2;
const CPU_BUDGET_MS = 40;

interface Pod {
  netns: Netns;
  containerId: string;
  ip: string;
}

/** Busy and total jiffies of the whole machine (/proc/stat). */
function cpuJiffies(): { busy: number; total: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'latin1').split('\n')[0]!.trim().split(/\s+/);
  const n = fields.map(Number);
  const idle = n[3]! + n[4]!; // idle + iowait
  const total = n.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

const TICK_MS = 1000 / 100; // USER_HZ

function ok(what: string, out: CniOutput): CniOutput {
  if (out.code !== 0) throw new Error(`${what} failed (${out.code}): ${out.stdout}${out.stderr}`);
  return out;
}

/** Pss of a process in KiB (smaps_rollup), 0 when it is gone. */
function pssKiB(pid: number): number {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('make bench-mass needs root');
  const scope = new Scope();
  const onSignal = (): void => void scope.close().finally(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const stateRoot = mkdtempSync(join(tmpdir(), 'bench-mass-'));
  scope.defer(() => rmSync(stateRoot, { recursive: true, force: true }), 'bench state');
  try {
    const net = allocSubnet();
    const bridge = await createBridge(scope, { v4Cidr: net.v4Cidr(1), prefix: 'bmas' });
    const pods: Pod[] = [];
    for (let i = 0; i < PODS; i++) {
      pods.push({ netns: await createNetns(scope, 'bmas'), containerId: uniqueName('bmas-'), ip: net.v4Cidr(10 + i) });
    }
    const bridgeConf = (p: Pod) => bridgeConfig({ bridge, ip: p.ip, gw: net.v4(1), name: 'bench-mass' });
    const call = (p: Pod, command: 'ADD' | 'DEL') => ({ command, containerId: p.containerId, netns: p.netns.path, ifname: 'eth0' });
    const stateDir = join(stateRoot, 'state');
    const announcerConf = { type: 'announcer', stateDir, idleExitMs: IDLE_EXIT_MS };

    /** One churn: every pod ADDed at once, then (after the bursts) DELed at once. */
    async function churn(withAnnouncer: boolean): Promise<{ cpuMs: number; background?: { processes: number; pssMiB: number } }> {
      const before = cpuJiffies();
      let background: { processes: number; pssMiB: number } | undefined;
      const results = await Promise.all(
        pods.map(async (p) => {
          const prev = ok('bridge ADD', await cniExec(BRIDGE_PLUGIN, call(p, 'ADD'), bridgeConf(p))).json;
          if (withAnnouncer) ok('announcer ADD', await cniExec(ANNOUNCER, call(p, 'ADD'), chainConfig(bridgeConf(p), announcerConf, prev)));
          return prev;
        }),
      );
      if (withAnnouncer) {
        const procs = (await announcerProcesses()).filter((p) => p.argv.some((a) => a.startsWith(stateRoot)) || p.argv.includes('hold-fds'));
        background = { processes: procs.length, pssMiB: procs.reduce((sum, p) => sum + pssKiB(p.pid), 0) / 1024 };
        await sleep(2500); // the default burst: rounds at +1 s and +2 s
      }
      await Promise.all(
        pods.map(async (p, i) => {
          if (withAnnouncer) ok('announcer DEL', await cniExec(ANNOUNCER, call(p, 'DEL'), chainConfig(bridgeConf(p), announcerConf, results[i])));
          ok('bridge DEL', await cniExec(BRIDGE_PLUGIN, call(p, 'DEL'), bridgeConf(p)));
        }),
      );
      if (withAnnouncer) {
        // The background announcer's exit is part of the cycle's cost.
        for (let i = 0; i < 100 && (await announcerProcesses()).some((p) => p.argv.some((a) => a.startsWith(stateRoot))); i++) await sleep(100);
      }
      const after = cpuJiffies();
      return { cpuMs: (after.busy - before.busy) * TICK_MS, background };
    }

    const withTimes: number[] = [];
    const withoutTimes: number[] = [];
    const backgrounds: { processes: number; pssMiB: number }[] = [];
    for (let c = 0; c < CYCLES; c++) {
      const bare = await churn(false);
      withoutTimes.push(bare.cpuMs);
      const full = await churn(true);
      withTimes.push(full.cpuMs);
      backgrounds.push(full.background!);
    }
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const perPod = (median(withTimes) - median(withoutTimes)) / PODS;
    const worst = backgrounds.reduce((a, b) => (b.pssMiB > a.pssMiB ? b : a));
    const verdict = (okay: boolean): string => (okay ? 'PASS' : 'FAIL');
    const load = readFileSync('/proc/loadavg', 'latin1').split(' ').slice(0, 3).join(' ');
    console.log(`cni-announcer bench-mass: ${PODS} pods at once, default bursts, ${CYCLES} interleaved cycles (load average ${load})`);
    console.log('');
    console.log('| measure | value | budget | verdict |');
    console.log('|---|---|---|---|');
    console.log(`| background processes once every ADD returned (worst cycle) | ${worst.processes} | ≤ ${PROCESS_BUDGET} | ${verdict(worst.processes <= PROCESS_BUDGET)} |`);
    console.log(`| their PSS (worst cycle) | ${worst.pssMiB.toFixed(1)} MiB | ≤ ${PSS_BUDGET_MIB} MiB | ${verdict(worst.pssMiB <= PSS_BUDGET_MIB)} |`);
    console.log(`| node CPU per pod cycle, bridge alone (median) | ${(median(withoutTimes) / PODS).toFixed(1)} ms | | |`);
    console.log(`| node CPU per pod cycle, bridge + announcer (median) | ${(median(withTimes) / PODS).toFixed(1)} ms | | |`);
    console.log(`| the announcer's share per pod cycle | ${perPod.toFixed(1)} ms | ≤ ${CPU_BUDGET_MS} ms | ${verdict(perPod <= CPU_BUDGET_MS)} |`);
    console.log('');
    console.log('CPU is the whole machine\'s (/proc/stat): anything else running adds to both columns.');
  } finally {
    await scope.close();
  }
}

main().catch((err: unknown) => {
  console.error(`bench-mass: ${(err as Error).message}`);
  process.exit(1);
});
