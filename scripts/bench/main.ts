// make bench: what each start of the plugin costs, next to this machine's
// yardstick (`node` on an empty file) and the Go peer (`tuning` chained after
// the real bridge plugin). Interleaved rounds in a clean environment, medians,
// one table with ratios, then the budgets of issue 8 as PASS/FAIL (the bench
// itself exits 0 either way: it is not a test). Root only: it builds a
// throwaway bridge pod and removes everything on exit, failure or signal.
//
//   BENCH_ROUNDS=N   measured rounds (default below); warm-up rounds come on top.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { ANNOUNCER, BRIDGE_PLUGIN, SYSTEM_CNI_DIR, cniExec } from '../../test/integration/harness/cni';
import { createBridgePod, type BridgePod } from '../../test/integration/harness/bridge-pods';
import type { Scope } from '../../test/integration/harness/scope';
import { requireExecutables, requireRoot } from '../shared/preflight';
import { scopedMain } from '../shared/scoped-main';
import { stopBackground, watchBackground } from './background';
import { describeTrace, STRACE, traceRun } from './close-trace';
import { checkBudgets, peerLine, probeCostVerdict, ROWS } from './budgets';
import { machineLines, loadLine } from './machine';
import { GNU_TIME, expectOk, timedRun } from './measure';
import { renderTable, renderVerdicts, type TableRow } from './report';
import { runRounds } from './rounds';
import { ANNOUNCER_DEFAULTS, ANNOUNCER_ONE, announcerCommand, announcerConf, packetCloseStep, processRows, rssSample, timedStep, type Programs } from './rows';

const HERE = dirname(fileURLToPath(import.meta.url));
const DEFAULT_ROUNDS = 30;
const WARMUP_ROUNDS = 3;
/** Peak RSS is taken in runs of its own (GNU time would add to the wall times); the largest of these counts. */
const RSS_RUNS = 3;
/** How long to watch the background processes after one default ADD (its rounds 2 and 3 are due at 1 s and 2 s). */
const BACKGROUND_WATCH_MS = 3000;

/** BENCH_ROUNDS, or the default. */
function roundsFromEnv(): number {
  const raw = process.env.BENCH_ROUNDS;
  if (raw === undefined || raw === '') return DEFAULT_ROUNDS;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_ROUNDS must be a positive integer, got "${raw}"`);
  return n;
}

/** Fails early, with the fix, when something the bench runs is missing. */
function preflight(p: Omit<Programs, 'emptyFile' | 'runtimeFloor' | 'stateDir'>): void {
  requireRoot('make bench', 'it creates a bridge, a netns and a pod');
  requireExecutables([
    [p.announcer, 'run `make build`'],
    [BRIDGE_PLUGIN, 'run `make system-deps` (containernetworking-plugins)'],
    [p.tuning, 'run `make system-deps` (containernetworking-plugins)'],
    [GNU_TIME, 'run `make system-deps` (Debian package `time`)'],
    [STRACE, 'run `make system-deps` (Debian package `strace`)'],
  ]);
  createRequire(p.probe).resolve('koffi'); // the probe's one dependency: `make deps`
}

/** Compiles an empty program with the plugin's runtime and build options: what a start costs before any plugin code runs. */
function buildRuntimeFloor(out: string): void {
  const root = resolve(HERE, '../..');
  execFileSync(join(root, 'node_modules/.bin/bun'), [join(root, 'scripts/build.mjs'), `--entry=${join(HERE, 'empty-entry.ts')}`, `--out=${out}`], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** Registers the undo steps for what plugin runs leave behind (a run cut short by a signal included), run newest first. */
function deferPluginCleanup(scope: Scope, p: Programs, pod: BridgePod): void {
  scope.defer(() => stopBackground(pod.containerId, p.stateDir), 'background announcer');
  const call = { containerId: pod.containerId, netns: pod.netns.path, ifname: pod.ifname, command: 'DEL' };
  scope.defer(async () => void (await cniExec(p.tuning, call, pod.chained({ type: 'tuning' }))), 'tuning DEL');
  scope.defer(async () => void (await cniExec(p.announcer, call, pod.chained(announcerConf(p, ANNOUNCER_DEFAULTS)))), 'announcer DEL');
}

async function bench(scope: Scope, base: Omit<Programs, 'emptyFile' | 'runtimeFloor' | 'stateDir'>, rounds: number, abort: AbortSignal): Promise<void> {
  const pod = await createBridgePod(scope, { prefix: 'bnch' });
  // One scratch dir for the node yardstick's empty file and the announcer's stateDir (the plugin creates it).
  const scratch = mkdtempSync(join(tmpdir(), 'cni-bench-'));
  scope.defer(() => rmSync(scratch, { recursive: true, force: true }), 'scratch dir');
  const programs: Programs = { ...base, emptyFile: join(scratch, 'empty.js'), runtimeFloor: join(scratch, 'empty-program'), stateDir: join(scratch, 'state') };
  writeFileSync(programs.emptyFile, '');
  buildRuntimeFloor(programs.runtimeFloor);
  deferPluginCleanup(scope, programs, pod);
  const header = machineLines(programs, WARMUP_ROUNDS, rounds, RSS_RUNS);

  const yieldToSignals = async (): Promise<void> => {
    await new Promise(setImmediate);
    abort.throwIfAborted();
  };
  const rows = processRows(programs, pod);
  const samples = await runRounds([...rows.map(timedStep), packetCloseStep(programs, pod)], {
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

  expectOk('default ADD (background figure)', timedRun(announcerCommand(programs, pod, 'ADD', ANNOUNCER_DEFAULTS)));
  const bg = await watchBackground(pod.containerId, programs.stateDir, BACKGROUND_WATCH_MS);
  expectOk('DEL (background figure)', timedRun(announcerCommand(programs, pod, 'DEL', ANNOUNCER_DEFAULTS)));

  // One ADD count 1 under strace, to see where its packet socket's release happens (strace slows each traced call).
  const traced = traceRun(announcerCommand(programs, pod, 'ADD', ANNOUNCER_ONE));
  expectOk('DEL (trace)', timedRun(announcerCommand(programs, pod, 'DEL', ANNOUNCER_ONE)));

  const table: TableRow[] = Object.values(ROWS).map((name) => {
    const row: TableRow = { name, samples: samples.get(name) ?? [] };
    const kib = rssKiB.get(name);
    if (kib !== undefined) row.rssKiB = kib;
    if (name === ROWS.closeLast || name === ROWS.closeShared) row.syscall = true;
    return row;
  });
  const lines = [
    ...header,
    '',
    renderTable(table, { name: ROWS.runtimeFloor, label: 'floor' }, { name: ROWS.tuning, label: 'tuning' }),
    '',
    'Budgets (issue 18, against the runtime floor: the empty program built as the plugin is):',
    renderVerdicts(checkBudgets(table)),
    'Budget (issue 12, no conflict on the bench bridge):',
    renderVerdicts([probeCostVerdict(table)]),
    '',
    peerLine(table),
    bg.roles.length === 0
      ? 'Background after a default ADD: no process found.'
      : `Background after a default ADD: ${bg.roles.join(', ')}; largest peak RSS ${(bg.peakKiB / 1024).toFixed(1)} MiB ` +
        `over ${BACKGROUND_WATCH_MS / 1000} s` +
        (bg.stillRunning.length === 0 ? '; all gone by then.' : `; still running then: ${bg.stillRunning.join(', ')}.`),
    "close(AF_PACKET): close(2) timed inside a probe process in the pod's netns. 'last ref' is what a process pays when it",
    "closes (or exits holding) the only reference: packet_release() waits in synchronize_net(); 'a dup' is what it pays",
    'while another process still holds one. One ADD count 1 under strace -f (traced calls run slower), following every',
    'copy of its packet socket:',
    ...describeTrace(traced).map((l) => `  ${l}`),
    `load at the end: ${loadLine()}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

await scopedMain('bench', async (scope, abort) => {
  const programs = {
    announcer: ANNOUNCER,
    tuning: join(SYSTEM_CNI_DIR, 'tuning'),
    cniPath: SYSTEM_CNI_DIR,
    node: process.execPath,
    probe: resolve(HERE, 'packet-close-probe.mjs'),
  };
  const rounds = roundsFromEnv();
  preflight(programs);
  await bench(scope, programs, rounds, abort);
});
