// What ADD leaves running after it returns, and stopping it at the end: the
// fd holder, and the background announcer that sends the later rounds (one per
// stateDir, up for idleExitMs after its last job). Ours are the announcer
// processes whose environment carries this run's CNI_CONTAINERID or whose argv
// names this run's stateDir; a signal goes only to such a process, and only
// while its /proc start time is still the one seen when it was found.
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { announcerProcesses } from '../../test/integration/harness/processes';

/** One of our background processes. */
export interface OwnProcess {
  pid: number;
  /** Field 22 of /proc/PID/stat: fixed for the life of the process. */
  startTime: string;
  /** The first argument after the program that is not a path (e.g. `daemon`, `hold-fds`). */
  role: string;
}

/** What the background processes did while watched. */
export interface Background {
  /** Role of each process found. */
  roles: string[];
  /** The largest VmHWM (peak RSS) of any of them, KiB. */
  peakKiB: number;
  /** Roles of those still running when the watch ended. */
  stillRunning: string[];
}

const POLL_MS = 20;
const TERM_GRACE_MS = 2000;

/** The start time of a live process (field 22 of /proc/PID/stat); undefined once it is gone or a zombie. */
async function startTimeOf(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => '');
  // comm (field 2) may hold spaces and parentheses: count fields after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return stat === '' || fields[0] === 'Z' ? undefined : fields[19];
}

/** The announcer processes of this run (see the top of this file). */
export async function ownBackground(containerId: string, stateDir: string): Promise<OwnProcess[]> {
  const found: OwnProcess[] = [];
  for (const p of await announcerProcesses()) {
    if (p.containerId !== containerId && !p.argv.includes(stateDir)) continue;
    const startTime = await startTimeOf(p.pid);
    if (startTime !== undefined) found.push({ pid: p.pid, startTime, role: p.argv.slice(1).find((a) => !a.startsWith('/')) ?? '?' });
  }
  return found;
}

/** Whether `p` is still the same live process. */
async function alive(p: OwnProcess): Promise<boolean> {
  return (await startTimeOf(p.pid)) === p.startTime;
}

/** VmHWM of a process in KiB, if it is still the one we found. */
async function peakRss(p: OwnProcess): Promise<number | undefined> {
  const status = await readFile(`/proc/${p.pid}/status`, 'latin1').catch(() => '');
  const m = /^VmHWM:\s+(\d+) kB/m.exec(status);
  return m && (await alive(p)) ? Number(m[1]) : undefined;
}

/** Watches our background processes for `watchMs` (or until all are gone) for their peak RSS. */
export async function watchBackground(containerId: string, stateDir: string, watchMs: number): Promise<Background> {
  const t0 = Date.now();
  const procs = await ownBackground(containerId, stateDir);
  let peakKiB = 0;
  let live = procs;
  while (live.length > 0 && Date.now() - t0 < watchMs) {
    const seen = await Promise.all(live.map(peakRss));
    live = live.filter((_, i) => seen[i] !== undefined);
    for (const kib of seen) peakKiB = Math.max(peakKiB, kib ?? 0);
    if (live.length > 0) await sleep(POLL_MS);
  }
  return { roles: procs.map((p) => p.role), peakKiB, stillRunning: live.map((p) => p.role) };
}

/** Sends `signal` to p if it is still the process we found. */
async function signalIfSame(p: OwnProcess, signal: NodeJS.Signals): Promise<void> {
  if (!(await alive(p))) return;
  try {
    process.kill(p.pid, signal);
  } catch {
    // Gone in between.
  }
}

/** Stops our background processes: SIGTERM, then SIGKILL for any still there after a grace period. */
export async function stopBackground(containerId: string, stateDir: string): Promise<void> {
  const procs = await ownBackground(containerId, stateDir);
  for (const p of procs) await signalIfSame(p, 'SIGTERM');
  const deadline = Date.now() + TERM_GRACE_MS;
  let live = procs;
  while (live.length > 0 && Date.now() < deadline) {
    await sleep(POLL_MS);
    live = (await Promise.all(live.map(async (p) => ((await alive(p)) ? p : undefined)))).filter((p) => p !== undefined);
  }
  for (const p of live) await signalIfSame(p, 'SIGKILL');
}
