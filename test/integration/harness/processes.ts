// Live announcer processes (the plugin itself or its background tail), found
// by scanning /proc, for "nothing outlives its attachment" assertions.
import { readdir, readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RUN_TAG_ENV } from './cni';
import { RUN_TAG } from './names';
import type { Scope } from './scope';

/** One live announcer process. */
export interface AnnouncerProcess {
  pid: number;
  argv: string[];
  /** RUN_TAG of the test process whose plugin call started it (inherited env), if any. */
  runTag?: string;
  /** CNI_CONTAINERID from its environment, if any. */
  containerId?: string;
}

/**
 * Whether an argv runs the announcer: `…/announcer` directly, through
 * `node …/announcer`, or under a process title such as `announcer tail …`.
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
      if (key === 'CNI_CONTAINERID') proc.containerId = kv.slice(eq + 1);
    }
    found.push(proc);
  }
  return found;
}

/** The argv of ADD's fd holder (src/sys/close-after-exit.ts), which exits on its own once ADD has. */
const HOLDER = 'hold-fds';
/** How long a holder may outlive the plugin call that started it before it counts as a leak. */
const HOLDER_GRACE_MS = 3000;

/**
 * Live announcer processes started through this test process's plugin calls
 * (by RUN_TAG). fd holders get a short grace to exit first: one still there
 * after it is listed like any other leak.
 */
export async function ownAnnouncerProcesses(): Promise<AnnouncerProcess[]> {
  const own = async (): Promise<AnnouncerProcess[]> => (await announcerProcesses()).filter((p) => p.runTag === RUN_TAG);
  for (let waited = 0; waited < HOLDER_GRACE_MS; waited += 50) {
    const found = await own();
    if (!found.some((p) => p.argv.includes(HOLDER))) return found;
    await sleep(50);
  }
  return own();
}

async function alive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => '');
  return !/^\d+ \(.*\) Z/s.test(stat);
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
    for (let i = 0; i < 40 && (await Promise.all(strays.map((p) => alive(p.pid)))).some(Boolean); i++) await sleep(50);
    for (const p of strays) {
      if (await alive(p.pid)) {
        try {
          process.kill(p.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    }
    if (opts.strict && strays.length > 0) {
      throw new Error(`stray announcer processes killed: ${strays.map((p) => `${p.pid} (${p.argv.join(' ')})`).join(', ')}`);
    }
  }, 'kill stray announcer processes');
}
