// make bench: what each start of the plugin costs, next to this machine's
// yardstick (`node` on an empty file) and the Go peer (`tuning` chained after
// the real bridge plugin). Interleaved rounds in a clean environment, medians,
// one table with ratios, then the start-up budgets as PASS/FAIL (the bench
// itself exits 0 either way: it is not a test). Root only: it builds a
// throwaway bridge pod and removes everything on exit, failure or signal,
// the announcer of its stateDir included.
//
//   BENCH_ROUNDS=N   measured rounds (default below); warm-up rounds come on top.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ANNOUNCER, BRIDGE_PLUGIN, SYSTEM_CNI_DIR, cniExec } from '../../test/integration/harness/cni';
import type { BridgePod } from '../../test/integration/harness/bridge-pods';
import { gatewayNetwork, routedPod } from '../../test/integration/harness/gateway';
import type { Scope } from '../../test/integration/harness/scope';
import { requireExecutables, requireRoot } from '../shared/preflight';
import { scopedMain } from '../shared/scoped-main';
import { announcerUsage, findAnnouncer, stopAnnouncer } from './announcer-proc';
import { checkBudgets, exchangeFloorLine, peerLine, probeCostVerdict, ROWS } from './budgets';
import { machineLines, loadLine } from './machine';
import { cleanEnv, GNU_TIME } from './measure';
import { NODE_SETTINGS_FILE } from '../../src/state-files';
import { renderTable, renderVerdicts, type TableRow } from './report';
import { runRounds } from './rounds';
import { statusUnderLoad } from './status-load';
import { buildExchangeFloor, buildIdleProgram, buildRuntimeFloor } from './runtime-floor';
import { announcerCpu } from './announcer-cpu';
import {
  ANNOUNCER_DEFAULTS,
  ANNOUNCER_ONE,
  announcerCommand,
  announcerConf,
  IDLE_EXIT_MS,
  processRows,
  rssSample,
  timedStep,
  type Programs,
} from './rows';

const DEFAULT_ROUNDS = 30;
const WARMUP_ROUNDS = 3;
/** Peak RSS is taken in runs of its own (GNU time would add to the wall times); the largest of these counts. */
const RSS_RUNS = 3;

/** What the bench runs before its scratch dir exists. */
type Base = Omit<Programs, 'emptyFile' | 'runtimeFloor' | 'exchangeFloor' | 'announcerBuild' | 'stateDir'>;

/** BENCH_ROUNDS, or the default. */
function roundsFromEnv(): number {
  const raw = process.env.BENCH_ROUNDS;
  if (raw === undefined || raw === '') return DEFAULT_ROUNDS;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_ROUNDS must be a positive integer, got "${raw}"`);
  return n;
}

/** Fails early, with the fix, when something the bench runs is missing. */
function preflight(p: Base): void {
  requireRoot('make bench', 'it creates a bridge, a netns and a pod');
  requireExecutables([
    [p.announcer, 'run `make build`'],
    [BRIDGE_PLUGIN, 'run `make system-deps` (containernetworking-plugins)'],
    [p.tuning, 'run `make system-deps` (containernetworking-plugins)'],
    [GNU_TIME, 'run `make system-deps` (Debian package `time`)'],
  ]);
}

/**
 * Registers the undo steps for what plugin runs leave behind (a run cut short by a signal included), run newest first.
 */
function deferPluginCleanup(scope: Scope, p: Programs, pod: BridgePod): void {
  scope.defer(() => stopAnnouncer(p.stateDir), 'the announcer of the bench stateDir');
  const call = { containerId: pod.containerId, netns: pod.netns.path, ifname: pod.ifname, command: 'DEL' };
  scope.defer(async () => void (await cniExec(p.tuning, call, pod.chained({ type: 'tuning' }))), 'tuning DEL');
  const conf = pod.chained(announcerConf(p.stateDir, ANNOUNCER_DEFAULTS));
  scope.defer(async () => void (await cniExec(p.announcer, call, conf)), 'announcer DEL');
}

/** The build id `announcer --version` prints. */
function announcerBuild(announcer: string): string {
  const id = /^Build: (\S+)$/m.exec(execFileSync(announcer, ['--version'], { encoding: 'utf8' }))?.[1];
  if (id === undefined) throw new Error(`${announcer} --version printed no build id`);
  return id;
}

/** The notes under the table: what its rows measure (one output line each). */
const ROW_NOTES = [
  'count 0: nothing to send, so the announcer validates and answers at once: ' +
    'the shim, the exchange and the validation.',
  'warm: the announcer of the bench stateDir runs (idleExitMs an hour). ' +
    'cold: it is stopped (SIGTERM, waited for) before',
  'each sample, untimed, and the shim starts one and waits for it to listen.',
  'The bench pod routes through a gateway netns on its bridge: every row but require runs the gateway check as',
  "report (after ADD returns); the require row waits for the gateway's answer.",
  'exchange floor: scripts/bench/exchange-floor-entry.ts, built as the plugin is, in place of the shim on the same',
  'rows: it reads stdin and /proc/uptime, sends one request and prints the answer; it checks and starts nothing.',
];

/** The announcer's own line: what it used over the whole run. */
function announcerLine(stateDir: string): string {
  const proc = findAnnouncer(stateDir);
  const usage = proc && announcerUsage(proc);
  if (usage === undefined)
    return 'The announcer of the bench stateDir: not running at the end (it should be: idleExitMs is an hour).';
  const mib = (kib: number): string => (kib / 1024).toFixed(1);
  return (
    `The announcer at the end (pid ${proc!.pid}, started by the last cold sample): ` +
    `peak RSS ${mib(usage.peakKiB)} MiB, PSS ${mib(usage.pssKiB)} MiB, CPU ${usage.cpuMs.toFixed(0)} ms.`
  );
}

/** The table, the budgets' verdicts and the notes under them. */
function report(
  samples: Map<string, number[]>,
  rssKiB: Map<string, number>,
  announcer: string,
  status: Awaited<ReturnType<typeof statusUnderLoad>>,
  cpu: Awaited<ReturnType<typeof announcerCpu>>,
): string[] {
  const table: TableRow[] = Object.values(ROWS).map((name) => {
    const row: TableRow = { name, samples: samples.get(name) ?? [] };
    const kib = rssKiB.get(name);
    if (kib !== undefined) row.rssKiB = kib;
    return row;
  });
  return [
    renderTable(table, { name: ROWS.runtimeFloor, label: 'floor' }, { name: ROWS.tuning, label: 'tuning' }),
    '',
    'Budgets (start-up, against the runtime floor: the empty program built as the plugin is):',
    renderVerdicts(checkBudgets(table)),
    'Budget (the conflict probe, no conflict on the bench bridge):',
    renderVerdicts([probeCostVerdict(table)]),
    'Budget (the announcer answers while it works):',
    renderVerdicts([status.verdict]),
    "Budgets (the announcer's own CPU):",
    renderVerdicts(cpu.verdicts),
    '',
    peerLine(table),
    exchangeFloorLine(table),
    ...ROW_NOTES,
    announcer,
    ...cpu.lines,
    status.line,
    `load at the end: ${loadLine()}`,
  ];
}

/** The announcer's own CPU (announcer-cpu.ts), on the warm announcer of the run's stateDir and the bench pod. */
async function measureAnnouncerCpu(programs: Programs, pod: BridgePod, idleProgram: string) {
  buildIdleProgram(idleProgram);
  return announcerCpu({
    announcerPid: findAnnouncer(programs.stateDir)?.pid ?? Number.NaN,
    add: announcerCommand(programs, pod, 'ADD', ANNOUNCER_ONE),
    del: announcerCommand(programs, pod, 'DEL', ANNOUNCER_ONE),
    runtimeFloor: { file: programs.runtimeFloor, args: [], env: cleanEnv() },
    idleProgram: { file: idleProgram, args: [], env: cleanEnv() },
  });
}

async function bench(scope: Scope, base: Base, rounds: number, abort: AbortSignal): Promise<void> {
  // The pod routes through a gateway netns on its bridge: the rows run the gateway check (report, the default; the
  // require row waits for the answer).
  const { net, bridge } = await gatewayNetwork(scope, { prefix: 'bnch' });
  const pod = await routedPod(scope, { prefix: 'bnch', net, bridge });
  // One scratch dir for the node yardstick's empty file, the runtime floor and the announcer's stateDirs.
  const scratch = mkdtempSync(join(tmpdir(), 'cni-bench-'));
  scope.defer(() => rmSync(scratch, { recursive: true, force: true }), 'scratch dir');
  const programs: Programs = {
    ...base,
    emptyFile: join(scratch, 'empty.js'),
    runtimeFloor: join(scratch, 'empty-program'),
    exchangeFloor: join(scratch, 'exchange-floor'),
    announcerBuild: announcerBuild(base.announcer),
    stateDir: join(scratch, 'state'),
  };
  writeFileSync(programs.emptyFile, '');
  // The node settings of the bench stateDir (as `announcer install --state-dir` writes them): an hour's idle exit.
  mkdirSync(programs.stateDir, { mode: 0o700 });
  writeFileSync(join(programs.stateDir, NODE_SETTINGS_FILE), JSON.stringify({ idleExitMs: IDLE_EXIT_MS }), {
    mode: 0o600,
  });
  buildRuntimeFloor(programs.runtimeFloor);
  buildExchangeFloor(programs.exchangeFloor);
  deferPluginCleanup(scope, programs, pod);
  const header = machineLines(programs, WARMUP_ROUNDS, rounds, RSS_RUNS);

  const yieldToSignals = async (): Promise<void> => {
    await new Promise(setImmediate);
    abort.throwIfAborted();
  };
  const rows = processRows(programs, pod, stopAnnouncer);
  const samples = await runRounds(rows.map(timedStep), {
    rounds,
    warmup: WARMUP_ROUNDS,
    between: yieldToSignals,
    progress: (done, total) => {
      if (process.stderr.isTTY) process.stderr.write(`\rround ${done}/${total}${done === total ? '\n' : ''}`);
    },
  });

  const rssKiB = new Map<string, number>();
  for (const row of rows) {
    for (let i = 0; i < RSS_RUNS; i++) {
      rssKiB.set(row.name, Math.max(rssKiB.get(row.name) ?? 0, rssSample(row)));
      await yieldToSignals();
    }
  }

  const announcer = announcerLine(programs.stateDir);
  const cpu = await measureAnnouncerCpu(programs, pod, join(scratch, 'idle-program'));
  // Last: it runs an announcer of its own, on a stateDir of its own.
  const status = await statusUnderLoad(scope);
  const lines = report(samples, rssKiB, announcer, status, cpu);
  process.stdout.write(`${[...header, '', ...lines].join('\n')}\n`);
}

await scopedMain('bench', async (scope, abort) => {
  const programs = {
    announcer: ANNOUNCER,
    tuning: join(SYSTEM_CNI_DIR, 'tuning'),
    cniPath: SYSTEM_CNI_DIR,
    node: process.execPath,
  };
  const rounds = roundsFromEnv();
  preflight(programs);
  await bench(scope, programs, rounds, abort);
});
