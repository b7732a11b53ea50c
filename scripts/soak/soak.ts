// `make soak`: pods of the real bridge plugin churn through the announcer (ADD, CHECK, DEL,
// deferred pods, IP-derived MACs, bursts, the gateway check) while a chaos schedule drawn from a seed acts on the
// announcer (SIGTERM, SIGKILL, SIGSTOP and SIGCONT, idle exits, an upgrade to a second build, a resident announcer
// stopped and replaced). One capture on the bridge and the CNI results are the oracle (oracle.ts). Everything the run
// makes belongs to its scope: netns, links, processes and temp dirs go on success, failure or Ctrl-C.
import { DAEMON_STATE_FILES } from '../../test/integration/harness/announcer-files';
import { ANNOUNCER_SOCKET } from '../../src/state-files';
import { readdir, readFile } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { announcerFiles } from '../../test/integration/harness/announcer-files';
import { writeNodeSettings } from '../../test/integration/harness/cni';
import { daemonsOf } from '../../test/integration/harness/daemon';
import { RUN_TAG } from '../../test/integration/harness/names';
import { killStrays, ownAnnouncerProcessesNow } from '../../test/integration/harness/processes';
import type { Scope } from '../../test/integration/harness/scope';
import type { Frame } from '../../test/integration/harness/tshark';
import { Builds } from './announcers';
import { owedFaults, runChaos } from './chaos';
import { rngFor } from './rng';
import type { ChaosContext } from './faults';
import { framesByCycle } from './frames';
import { Gate } from './gate';
import { type AnnouncerEvent, LogWatch } from './log-watch';
import type { Cycle, FaultRecord } from './model';
import type { AnnouncerStop, EndState } from './oracle';
import { judge } from './oracle-more';
import { createSoakNetwork, markersLeft, type SoakNetwork } from './pods';
import type { SoakReport } from './report';
import { pollUntil } from './time';
import { type KeptNetns, runWorker, type WorkerContext } from './worker';

/** How a run goes. */
export interface SoakOptions {
  seconds: number;
  seed: number;
  workers: number;
  /** Faults of each kind at least; default one per 150 s, at least one. */
  minimum?: number;
  /** The node's idleExitMs (announcer.conf). */
  idleExitMs?: number;
  signal: AbortSignal;
  say(line: string): void;
}

/** The node's idleExitMs: short, so the announcer goes idle whenever the load is quiet. */
export const SOAK_IDLE_EXIT_MS = 1500;

/** The DaemonSet's terminationGracePeriodSeconds (deploy/daemonset.yaml), in ms. */
async function daemonsetGraceMs(): Promise<number> {
  const file = new URL('../../deploy/daemonset.yaml', import.meta.url);
  const seconds = parse(await readFile(file, 'utf8'))?.spec?.template?.spec?.terminationGracePeriodSeconds;
  if (typeof seconds !== 'number') throw new Error(`${file.pathname}: no terminationGracePeriodSeconds`);
  return seconds * 1000;
}

/** What the end of the run left: waits (bounded) for the announcer's own idle exit first. */
async function endState(stateDir: string, idleExitMs: number, prefix: string): Promise<EndState> {
  await pollUntil(async () => (await daemonsOf(stateDir)).length === 0, idleExitMs + 10_000, 100);
  const announcers = (await ownAnnouncerProcessesNow()).map((p) => `pid ${p.pid}: ${p.argv.join(' ')}`);
  // The announcer's own files: its settings and locks; its socket goes with it.
  const own = DAEMON_STATE_FILES.filter((f) => f !== ANNOUNCER_SOCKET);
  const left = (await readdir(stateDir).catch(() => [])).filter((f) => !own.includes(f));
  return { at: Date.now(), left, announcers, markers: await markersLeft(prefix) };
}

/** The run's fixed parts: files, builds, network. */
async function setUp(scope: Scope, opts: SoakOptions, idleExitMs: number) {
  killStrays(scope); // registered first, so it runs last: any announcer of this run still alive then is killed
  const dir = await mkdtemp(join(tmpdir(), 'announcer-soak-'));
  scope.defer(() => rm(dir, { recursive: true, force: true }), `soak dir ${dir}`);
  opts.say('soak: building the second build (scripts/build.mjs --build-id)…');
  const builds = await Builds.make(dir);
  const files = await announcerFiles(scope);
  writeNodeSettings(files.stateDir, { idleExitMs, logFile: files.logFile, logLevel: 'info' });
  const sn = await createSoakNetwork(scope, `sk${RUN_TAG}`);
  return { builds, files, sn, graceMs: await daemonsetGraceMs() };
}

/** One line every 15 s while the run goes. */
function progress(opts: SoakOptions, startedAt: number, cycles: readonly Cycle[], faults: readonly FaultRecord[]) {
  return setInterval(() => {
    const calls = cycles.flatMap((c) => [...(c.add ? [c.add] : []), ...c.checks, ...c.dels]);
    const failed = calls.filter((r) => r.code !== 0).length;
    const s = ((Date.now() - startedAt) / 1000).toFixed(0);
    opts.say(
      `soak: +${s} s: ${cycles.length} pods, ${calls.length} calls (${failed} not exit 0), ${faults.length} faults`,
    );
  }, 15_000);
}

/** Why an announcer stopped, in a few words. */
function stopWhy(e: AnnouncerEvent, signalled: ReadonlySet<number>): string {
  if (e.reason === 'idle') return 'idle';
  if (e.reason === 'signal') return signalled.has(e.pid) ? "the soak's SIGTERM" : 'a signal';
  if (e.reason === 'upgrade') return 'hand-over to the new build';
  if (e.reason === 'resident') return 'hand-over to a resident announcer';
  // A release before the bounded stop says no reason.
  return e.handedOver ? 'handed over' : signalled.has(e.pid) ? 'SIGTERM' : 'idle';
}

/** Every announcer stop of the run: the log's stop lines (why, how long the stop took), and the SIGKILLs. */
async function announcerStops(log: LogWatch, signalled: ReadonlySet<number>, faults: readonly FaultRecord[]) {
  await log.update();
  const logged: AnnouncerStop[] = log.events
    .filter((e) => e.what === 'stopped')
    .map((e) => ({
      at: e.at,
      pid: e.pid,
      why: stopWhy(e, signalled),
      ...(e.stopMs === undefined ? {} : { stopMs: e.stopMs }),
    }));
  const killed = faults.flatMap((f) =>
    f.killedAt === undefined ? [] : [{ at: f.killedAt, pid: f.pid ?? 0, why: 'SIGKILL' }],
  );
  return [...logged, ...killed].sort((a, b) => a.at - b.at);
}

/** Decodes the capture; a capture that fails (the kernel dropped frames…) is a problem of the run. */
async function stopCapture(sn: SoakNetwork, problems: string[]): Promise<Frame[]> {
  try {
    return await sn.capture.stop();
  } catch (err) {
    problems.push(`the capture: ${err instanceof Error ? err.message : String(err)}`);
    return [];
  }
}

/** The run as it goes: what the workers and the chaos schedule share. */
interface Run {
  startedAt: number;
  minimum: number;
  idleExitMs: number;
  graceMs: number;
  builds: Builds;
  sn: SoakNetwork;
  stateDir: string;
  cycles: Cycle[];
  faults: FaultRecord[];
  problems: string[];
  log: LogWatch;
  signalled: Set<number>;
  kept: KeptNetns;
}

/** Load and chaos until the schedule is done; then the workers finish their pods. */
async function loadAndChaos(scope: Scope, opts: SoakOptions, run: Run, logFile: string): Promise<void> {
  const { builds, cycles, faults, startedAt } = run;
  const gate = new Gate();
  let stopped = false;
  const stopping = (): boolean => stopped || opts.signal.aborted;
  const inFlight = new Map();
  const target = { plugin: () => builds.installed, stateDir: run.stateDir, logFile, inFlight };
  const wctx: WorkerContext = {
    seed: opts.seed,
    scope,
    signal: opts.signal,
    sn: run.sn,
    target,
    gate,
    cycles,
    kept: run.kept,
    stopping,
  };
  const cctx: ChaosContext = { ...wctx, ...run, inFlight };
  const owed = owedFaults(rngFor(opts.seed, 'chaos'), run.minimum);
  opts.say(`soak: faults owed, in order: ${owed.join(', ')}; then drawn at random until the time is up`);
  const ticker = progress(opts, startedAt, cycles, faults);
  const workers = Array.from({ length: opts.workers }, (_, i) => runWorker(wctx, i));
  const record = (f: FaultRecord): void => {
    faults.push(f);
    const at = ((f.at - startedAt) / 1000).toFixed(1);
    opts.say(`soak: +${at} s ${f.kind}${f.counted ? '' : ' (not counted)'}: ${f.detail}`);
  };
  const endsAt = startedAt + opts.seconds * 1000;
  const hardEndsAt = endsAt + Math.max(120_000, opts.seconds * 500);
  const problem = (p: string): number => run.problems.push(p);
  try {
    await runChaos(cctx, { seed: opts.seed, minimum: run.minimum, endsAt, hardEndsAt, record, problem });
  } finally {
    stopped = true;
    gate.open();
    await Promise.all(workers);
    clearInterval(ticker);
  }
}

/** Runs the soak and judges it. */
export async function runSoak(scope: Scope, opts: SoakOptions): Promise<SoakReport> {
  const idleExitMs = opts.idleExitMs ?? SOAK_IDLE_EXIT_MS;
  const minimum = opts.minimum ?? Math.max(1, Math.floor(opts.seconds / 150));
  const { builds, files, sn, graceMs } = await setUp(scope, opts, idleExitMs);
  const log = new LogWatch(files.logFile);
  const fixed = { minimum, idleExitMs, graceMs, builds, sn, stateDir: files.stateDir, log };
  const ended = new AbortController();
  const kept = { watchers: [], ended: ended.signal };
  const run: Run = {
    ...fixed,
    startedAt: Date.now(),
    cycles: [],
    faults: [],
    problems: [],
    signalled: new Set(),
    kept,
  };
  opts.say(`soak: seed ${opts.seed}, ${opts.seconds} s, ${opts.workers} workers, at least ${minimum} of each fault`);
  await loadAndChaos(scope, opts, run, files.logFile);
  const { cycles, faults, problems, startedAt } = run;
  const end = await endState(files.stateDir, idleExitMs, sn.prefix);
  ended.abort();
  await Promise.all(kept.watchers);
  // A pod whose setup or teardown failed (a harness step, not the announcer) makes the run itself fail.
  for (const c of cycles) if (c.problem !== undefined) problems.push(`pod ${c.containerId}: ${c.problem}`);
  const frames = await stopCapture(sn, problems);
  const { of, unplaced } = framesByCycle(frames, cycles, sn.gw);
  const stops = await announcerStops(log, run.signalled, faults);
  const rows = judge({ startedAt, cycles, faults, framesOf: of, stops, end, graceMs });
  const base = { seed: opts.seed, seconds: opts.seconds, workers: opts.workers, minimum, idleExitMs };
  const done = { startedAt, endedAt: Date.now(), builds: builds.ids, faults, cycles, rows, unplaced, problems };
  return { ...base, ...done, frames: frames.length, framesOf: of, stops, logFile: files.logFile };
}
