// The background announcer of a stateDir (`announcer daemon <stateDir>`, see
// src/daemon) seen from outside: its process and memory, the CLI verbs that
// talk to it (`announcer status`, `announcer announce`), and the files it keeps
// in stateDir next to the attachments' records.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { StatusReport } from '../../../src/daemon/status-cli';
import { readFile } from 'node:fs/promises';
import { ANNOUNCER, ANNOUNCER_RUNTIME, RUN_TAG_ENV } from './cni';
import { run, type RunResult } from './exec';
import { RUN_TAG } from './names';
import type { Scope } from './scope';
import { ownAnnouncerProcessesNow, signalDaemon, type AnnouncerProcess } from './processes';
import { waitFor } from './wait';

/** The socket of a running announcer. */
export { ANNOUNCER_SOCKET as DAEMON_SOCKET } from '../../../src/state-files';

/** The live background announcers of stateDir that this test process started (no grace). */
export async function daemonsOf(stateDir: string): Promise<AnnouncerProcess[]> {
  return (await ownAnnouncerProcessesNow()).filter((p) => p.daemonStateDir === stateDir);
}

/** Waits until no background announcer of stateDir runs (it exits idleExitMs after its last work). */
export async function waitDaemonGone(stateDir: string, timeoutMs = 5000): Promise<void> {
  await waitFor(async () => (await daemonsOf(stateDir)).length === 0, {
    timeoutMs,
    what: `the background announcer of ${stateDir} to exit`,
  });
}

/** Waits until the announcer `pid` of stateDir is gone (`what`: what is awaited, for the timeout message). */
export async function waitDaemonExit(stateDir: string, pid: number, what = `announcer ${pid} to exit`): Promise<void> {
  await waitFor(async () => !(await daemonsOf(stateDir)).some((p) => p.pid === pid), { timeoutMs: 10_000, what });
}

/** The one live announcer of stateDir started by this test process; throws unless there is exactly one. */
export async function theDaemonOf(stateDir: string): Promise<number> {
  const found = await daemonsOf(stateDir);
  if (found.length !== 1)
    throw new Error(`expected one announcer of ${stateDir}, found ${found.map((p) => p.pid).join(', ') || 'none'}`);
  return found[0]!.pid;
}

/** Sends `signal` to the one announcer of stateDir (signalDaemon) and waits until it is gone; resolves with its pid. */
async function endDaemon(stateDir: string, signal: NodeJS.Signals): Promise<number> {
  const pid = await theDaemonOf(stateDir);
  if (!(await signalDaemon(pid, stateDir, signal)))
    throw new Error(`pid ${pid} is no longer the announcer of ${stateDir}`);
  await waitDaemonExit(stateDir, pid);
  return pid;
}

/** SIGKILLs the one announcer of stateDir this test process started and waits until it is gone; its pid. */
export function killDaemon(stateDir: string): Promise<number> {
  return endDaemon(stateDir, 'SIGKILL');
}

/** SIGTERMs the one announcer of stateDir (it stops at its next turn) and waits until it is gone; its pid. */
export function terminateDaemon(stateDir: string): Promise<number> {
  return endDaemon(stateDir, 'SIGTERM');
}

/** A process's memory from /proc/PID/smaps_rollup, in KiB: Rss, Pss, and Pss split into anonymous and file pages. */
export async function memoryKiB(
  pid: number,
): Promise<{ rss: number; pss: number; pssAnon: number; pssFile: number } | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/smaps_rollup`, 'latin1');
  } catch {
    return undefined;
  }
  const field = (name: string): number | undefined => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  const [rss, pss, pssAnon, pssFile] = ['Rss', 'Pss', 'Pss_Anon', 'Pss_File'].map(field);
  if (rss === undefined || pss === undefined) return undefined;
  return { rss, pss, pssAnon: pssAnon ?? 0, pssFile: pssFile ?? 0 };
}

/** Runs the built announcer with CLI arguments (`status …`, `announce …`), tagged with RUN_TAG. */
export async function announcerCli(args: readonly string[], timeoutMs = 30_000): Promise<RunResult> {
  return run(ANNOUNCER, args, { env: { [RUN_TAG_ENV]: RUN_TAG }, timeoutMs });
}

/** `announcer status --json`: the report the CLI prints (its type, not its code). */
export type StatusJson = StatusReport;

/** `announcer status --json --state-dir stateDir`, parsed; rejects unless it exits 0 with one JSON line. */
export async function announcerStatus(stateDir: string): Promise<StatusJson> {
  const res = await announcerCli(['status', '--json', '--state-dir', stateDir]);
  if (res.code !== 0) throw new Error(`announcer status exited ${res.code}: ${res.stderr.trim()}`);
  return JSON.parse(res.stdout) as StatusJson;
}

/**
 * The running announcer's status (source 'daemon', not the records), once it answers and `until` holds of it (default:
 * at once); `what` and `timeoutMs` as waitFor's.
 */
export async function daemonStatus(
  stateDir: string,
  until: (st: StatusJson) => boolean = () => true,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<StatusJson> {
  return waitFor(
    async () => {
      const st = await announcerStatus(stateDir);
      return st.source === 'daemon' && until(st) && st;
    },
    { what: `the announcer of ${stateDir} to answer status`, ...opts },
  );
}

/** An `announcer daemon` a test runs itself: its process, what it printed so far, and its exit code once it exits. */
export interface SpawnedDaemon {
  child: ChildProcess;
  pid: number;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

/**
 * Starts `announcer daemon <stateDir> ...flags` tagged with RUN_TAG (PATH alone besides), stdout and stderr kept, and
 * with `readyFd` a pipe as fd 3; at scope close it is SIGTERMed if it still runs, and SIGKILLed 5 s later.
 */
export function spawnDaemon(
  scope: Scope,
  stateDir: string,
  flags: readonly string[] = [],
  opts: { readyFd?: boolean } = {},
): SpawnedDaemon {
  const child = spawn(ANNOUNCER, ['daemon', stateDir, ...flags], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...ANNOUNCER_RUNTIME, [RUN_TAG_ENV]: RUN_TAG },
    stdio: ['ignore', 'pipe', 'pipe', ...(opts.readyFd ? (['pipe'] as const) : [])],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d: Buffer) => void (out.stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => void (out.stderr += d.toString()));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  scope.defer(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }, `announcer daemon ${stateDir}`);
  return { child, pid: child.pid!, stdout: () => out.stdout, stderr: () => out.stderr, exited };
}
