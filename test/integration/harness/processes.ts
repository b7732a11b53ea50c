// Live announcer processes (the plugin itself, or the background announcer
// of a stateDir), found by scanning /proc, for "nothing
// outlives its attachment" assertions.
import { readdir, readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RUN_TAG_ENV } from './cni';
import { RUN_TAG, runTagOfPath } from './names';
import type { Scope } from './scope';
import { isLive } from './proc-tree';

/** One live announcer process. */
export interface AnnouncerProcess {
  pid: number;
  argv: string[];
  /**
   * RUN_TAG of the test process whose plugin call started it (inherited env, or the PATH of a detached process), if
   * any.
   */
  runTag?: string;
  /**
   * CNI_CONTAINERID from its environment, if any. Left out for a background
   * announcer: it serves every attachment of its stateDir.
   */
  containerId?: string;
  /** The stateDir a background announcer (`announcer daemon <stateDir>`) serves. */
  daemonStateDir?: string;
}

/**
 * Whether an argv runs the announcer: `…/announcer` directly, through
 * `node …/announcer`, or under a process title such as `announcer daemon …`.
 */
export function isAnnouncerArgv(argv: readonly string[]): boolean {
  return argv.slice(0, 2).some((a) => /^announcer(?:$|[:-])/.test(basename(a.split(/\s/)[0] ?? '')));
}

async function readNul(path: string): Promise<string[] | undefined> {
  try {
    return (await readFile(path, 'latin1')).split('\0').filter((s) => s !== '');
  } catch {
    return undefined; // Gone, or not ours to read.
  }
}

/** The verb of the background announcer (src/daemon), which exits on its own after idleExitMs without work. */
const DAEMON = 'daemon';

/** The stateDir of a background announcer's argv (`… daemon <stateDir>`), else undefined. */
export function daemonStateDirOf(argv: readonly string[]): string | undefined {
  const at = argv.indexOf(DAEMON);
  const dir = at >= 0 && at <= 2 ? argv[at + 1] : undefined;
  return dir?.startsWith('/') ? dir : undefined;
}

/** All live announcer processes on the machine (zombies have no argv and are left out). */
export async function announcerProcesses(): Promise<AnnouncerProcess[]> {
  const found: AnnouncerProcess[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const argv = await readNul(`/proc/${entry}/cmdline`);
    if (!argv || !isAnnouncerArgv(argv)) continue;
    const proc: AnnouncerProcess = { pid: Number(entry), argv };
    for (const kv of (await readNul(`/proc/${entry}/environ`)) ?? []) {
      const eq = kv.indexOf('=');
      const key = kv.slice(0, eq);
      if (key === RUN_TAG_ENV) proc.runTag = kv.slice(eq + 1);
      // A detached process (the background announcer) has PATH alone: the tag is in it.
      if (key === 'PATH') proc.runTag ??= runTagOfPath(kv.slice(eq + 1));
      if (key === 'CNI_CONTAINERID') proc.containerId = kv.slice(eq + 1);
    }
    const daemonStateDir = daemonStateDirOf(argv);
    if (daemonStateDir !== undefined) {
      proc.daemonStateDir = daemonStateDir;
      delete proc.containerId;
    }
    found.push(proc);
  }
  return found;
}

/**
 * How long a background announcer may still run before it counts as a leak.
 * Every command leaves one running for idleExitMs; the harness stops a test's
 * own at scope close (stopDaemonAtClose), so one still here is another's.
 */
const DAEMON_GRACE_MS = 5000;

/** Live announcer processes of this test process (by RUN_TAG), at once, without any grace. */
export async function ownAnnouncerProcessesNow(): Promise<AnnouncerProcess[]> {
  return (await announcerProcesses()).filter((p) => p.runTag === RUN_TAG);
}

/**
 * Live announcer processes started through this test process's plugin calls
 * (by RUN_TAG; a background announcer gets it in the PATH the ADD that
 * started it passes on). Background announcers get a grace (5 s) to exit on
 * their own first: one still there after it is listed like any other leak.
 */
export async function ownAnnouncerProcesses(): Promise<AnnouncerProcess[]> {
  const graced = (p: AnnouncerProcess, waited: number): boolean =>
    p.daemonStateDir !== undefined && waited < DAEMON_GRACE_MS;
  const start = Date.now();
  for (;;) {
    const found = await ownAnnouncerProcessesNow();
    if (!found.some((p) => graced(p, Date.now() - start))) return found;
    await sleep(50);
  }
}

/**
 * At scope close, kills (SIGTERM, then SIGKILL) the announcer processes this
 * test process started that are still alive. With `strict`, finding any is a
 * cleanup error, so a leak fails the test.
 */
export function killStrays(scope: Scope, opts: { strict?: boolean } = {}): void {
  scope.defer(async () => {
    const strays = await ownAnnouncerProcesses();
    for (const p of strays) {
      try {
        process.kill(p.pid, 'SIGTERM');
      } catch {
        // Already gone.
      }
    }
    for (let i = 0; i < 40 && (await Promise.all(strays.map((p) => isLive(p.pid)))).some(Boolean); i++) await sleep(50);
    for (const p of strays) {
      if (await isLive(p.pid)) {
        try {
          process.kill(p.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    }
    if (opts.strict && strays.length > 0) {
      throw new Error(
        `stray announcer processes killed: ${strays.map((p) => `${p.pid} (${p.argv.join(' ')})`).join(', ')}`,
      );
    }
  }, 'kill stray announcer processes');
}

/**
 * The pids of this test process's announcer calls for one container (by CNI_CONTAINERID; a background announcer serves
 * every attachment, so it is never among them); with `now`, without waiting out any grace.
 */
export async function processesOf(containerId: string, opts: { now?: boolean } = {}): Promise<number[]> {
  const own = opts.now ? await ownAnnouncerProcessesNow() : await ownAnnouncerProcesses();
  return own.filter((p) => p.containerId === containerId).map((p) => p.pid);
}

/**
 * Sends `signal` to pid after checking again that it is `announcer daemon <stateDir>` of our RUN_TAG; false when it is
 * gone or no longer that.
 */
export async function signalDaemon(pid: number, stateDir: string, signal: NodeJS.Signals): Promise<boolean> {
  const again = (await ownAnnouncerProcessesNow()).find((p) => p.pid === pid);
  if (again?.daemonStateDir !== stateDir) return false;
  process.kill(pid, signal);
  return true;
}
