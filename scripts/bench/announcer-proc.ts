// The node's announcer of the bench's stateDir (`announcer daemon <stateDir>`,
// one per stateDir, started by the first shim that finds none): found by its
// argv in /proc, read (peak RSS, PSS, CPU), and stopped before a cold-ADD
// sample. A signal goes only to a process whose argv is exactly that
// announcer's, and only while its /proc start time is still the one seen.
// Synchronous: the bench's rows run between spawnSync calls.
import { readdirSync, readFileSync } from 'node:fs';
import { DAEMON_VERB, READY_FD, READY_FD_FLAG } from '../../src/self-command';

/** The flag a shim starts the announcer with (src/shim/start.ts). */
const SHIM_STARTED = `--${READY_FD_FLAG}=${READY_FD}`;

/** One live announcer of a stateDir. */
export interface AnnouncerProc {
  pid: number;
  /** Field 22 of /proc/PID/stat: fixed for the life of the process. */
  startTime: string;
}

/** What the announcer used so far. */
export interface AnnouncerUsage {
  /** VmHWM, KiB. */
  peakKiB: number;
  /** Pss from smaps_rollup, KiB. */
  pssKiB: number;
  /** utime + stime, ms. */
  cpuMs: number;
}

const USER_HZ = 100;
const STOP_MS = 5000;
const POLL_MS = 5;

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return '';
  }
}

/** The fields of /proc/PID/stat after comm (field 3 first), or undefined once gone or a zombie. */
function statFields(pid: number): string[] | undefined {
  const stat = readOrEmpty(`/proc/${pid}/stat`);
  // comm (field 2) may hold spaces and parentheses: count fields after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return stat === '' || fields[0] === 'Z' ? undefined : fields;
}

/**
 * Whether argv is `<program> daemon <stateDir>`, as the DaemonSet runs it, or `… --ready-fd=3`, as a shim starts it
 * (the program under any name or process title).
 */
export function isDaemonOf(argv: readonly string[], stateDir: string): boolean {
  const [, verb, dir, ...rest] = argv;
  return verb === DAEMON_VERB && dir === stateDir && (rest.length === 0 || rest.join(' ') === SHIM_STARTED);
}

/** Every live announcer of stateDir (one, unless the start lock failed). */
export function announcersOf(stateDir: string): AnnouncerProc[] {
  const found: AnnouncerProc[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = readOrEmpty(`/proc/${entry}/cmdline`)
      .split('\0')
      .filter((s) => s !== '');
    if (!isDaemonOf(argv, stateDir)) continue;
    const startTime = statFields(Number(entry))?.[19];
    if (startTime !== undefined) found.push({ pid: Number(entry), startTime });
  }
  return found;
}

/** The live announcer of stateDir, if one runs. */
export function findAnnouncer(stateDir: string): AnnouncerProc | undefined {
  return announcersOf(stateDir)[0];
}

/** Whether p is still the same live process. */
function alive(p: AnnouncerProc): boolean {
  return statFields(p.pid)?.[19] === p.startTime;
}

/** Its usage so far, or undefined once it is gone. */
export function announcerUsage(p: AnnouncerProc): AnnouncerUsage | undefined {
  const fields = statFields(p.pid);
  const hwm = /^VmHWM:\s+(\d+) kB/m.exec(readOrEmpty(`/proc/${p.pid}/status`));
  const pss = /^Pss:\s+(\d+) kB/m.exec(readOrEmpty(`/proc/${p.pid}/smaps_rollup`));
  if (fields === undefined || fields[19] !== p.startTime || !hwm || !pss) return undefined;
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14, 15)
  return { peakKiB: Number(hwm[1]), pssKiB: Number(pss[1]), cpuMs: (ticks * 1000) / USER_HZ };
}

/** Blocks the thread for ms (the bench is synchronous between samples). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Stops the announcer of stateDir, if one runs: SIGTERM, then waits for it to
 * be gone; SIGKILL after STOP_MS (and then a throw: a cold sample must not
 * follow an announcer that did not stop as it should).
 */
export function stopAnnouncer(stateDir: string, signal: NodeJS.Signals = 'SIGTERM'): void {
  const p = findAnnouncer(stateDir);
  if (p === undefined) return;
  try {
    process.kill(p.pid, signal);
  } catch {
    return; // gone in between
  }
  const deadline = Date.now() + STOP_MS;
  while (alive(p)) {
    if (Date.now() > deadline) {
      if (alive(p)) process.kill(p.pid, 'SIGKILL');
      throw new Error(`the announcer of ${stateDir} (pid ${p.pid}) did not exit within ${STOP_MS} ms of ${signal}`);
    }
    sleepSync(POLL_MS);
  }
}
