// Processes found by scanning /proc: by argv, and the descendants of a set of
// pids (a daemonized shim's children are no descendants of the test process,
// so signalling them needs their pids).
import { readdir, readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

/** A live (not zombie) process's argv, or undefined when it is gone, a zombie, or not ours to read. */
async function argvOf(pid: number): Promise<string[] | undefined> {
  const raw = await readFile(`/proc/${pid}/cmdline`, 'latin1').catch(() => '');
  return raw === '' ? undefined : raw.split('\0').filter((s) => s !== '');
}

/** The parent pid in /proc/PID/stat, or undefined when the process is gone. */
async function parentOf(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => undefined);
  // The comm field may hold spaces and parentheses: fields are counted after its last ')'.
  const ppid = stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
  return ppid === undefined ? undefined : Number(ppid);
}

async function allPids(): Promise<number[]> {
  return (await readdir('/proc')).filter((e) => /^\d+$/.test(e)).map(Number);
}

/** Pids of live processes whose argv satisfies `match` (zombies have no argv and are left out). */
export async function pidsWithArgv(match: (argv: string[]) => boolean): Promise<number[]> {
  const found: number[] = [];
  for (const pid of await allPids()) {
    const argv = await argvOf(pid);
    if (argv && pid !== process.pid && match(argv)) found.push(pid);
  }
  return found;
}

/** Every live descendant of `pids` (children, their children…), deepest last. */
export async function descendantsOf(pids: readonly number[]): Promise<number[]> {
  const parents = new Map<number, number>();
  for (const pid of await allPids()) {
    const ppid = await parentOf(pid);
    if (ppid !== undefined) parents.set(pid, ppid);
  }
  const found: number[] = [];
  let level = new Set(pids);
  while (level.size > 0) {
    const next = [...parents].filter(([, ppid]) => level.has(ppid)).map(([pid]) => pid);
    found.push(...next);
    level = new Set(next);
  }
  return found;
}

/** PF_EXITING (include/linux/sched.h): the process has begun to exit and runs no code of its own again. */
const PF_EXITING = 0x4;

/**
 * What a /proc/PID/stat line says: whether the process is live (neither a zombie nor exiting) and its start time,
 * which with the pid names one process (a pid alone can be recycled).
 */
export function procStat(text: string): { live: boolean; startTime: string } {
  // The comm field may hold spaces and parentheses: fields are counted after its last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const exiting = (Number(fields[6]) & PF_EXITING) !== 0; // field 9, the kernel's flags
  return { live: fields[0] !== 'Z' && fields[0] !== 'X' && !exiting, startTime: fields[19] ?? '' };
}

/** The start time of pid, or undefined when it is gone. */
export async function startTimeOf(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => undefined);
  return stat === undefined ? undefined : procStat(stat).startTime;
}

/**
 * Whether pid runs, neither a zombie nor exiting (a killed process may take a while in the kernel's exit path, closing
 * its sockets: it is stopped, not live); with `startTime`, only while pid is still that process.
 */
export async function isLive(pid: number, startTime?: string): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => undefined);
  if (stat === undefined) return false;
  const seen = procStat(stat);
  return seen.live && (startTime === undefined || seen.startTime === startTime);
}

/**
 * Sends `signal` to each pid (gone ones are skipped) and waits up to timeoutMs until none is live; rejects naming those
 * left.
 */
export async function signalAndWait(pids: readonly number[], signal: NodeJS.Signals, timeoutMs: number): Promise<void> {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const live = (await Promise.all(pids.map(async (pid) => ((await isLive(pid)) ? pid : undefined)))).filter(
      (p) => p !== undefined,
    );
    if (live.length === 0) return;
    if (Date.now() >= deadline) throw new Error(`still live after ${signal}: ${live.join(', ')}`);
    await sleep(50);
  }
}
