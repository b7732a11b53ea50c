// What a default ADD leaves running after it returns (the background rounds):
// found by its CNI_CONTAINERID, which is unique to this bench run, and watched
// through /proc until it exits, for its peak RSS and lifetime. Read-only.
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { announcerProcesses } from '../../test/integration/harness/processes';

/** The background processes one ADD left, watched to their end (or to the cap). */
export interface Background {
  /** What each one is: the first argument after the program that is not a path (e.g. `tail`, `hold-fds`). */
  roles: string[];
  /** The largest VmHWM (peak RSS) of any of them, KiB. */
  peakKiB: number;
  /** From the first look until the last of them was gone (or the cap). */
  aliveMs: number;
  /** Whether one still ran at the cap. */
  capped: boolean;
}

const POLL_MS = 20;

/** VmHWM of a live, non-zombie process in KiB; undefined once it is gone. */
async function peakRss(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'latin1').catch(() => '');
  if (status === '' || /^State:\s+Z/m.test(status)) return undefined;
  const m = /^VmHWM:\s+(\d+) kB/m.exec(status);
  return m ? Number(m[1]) : undefined;
}

/** Watches the announcer processes that carry `containerId` until they exit or `capMs` passes. */
export async function watchBackground(containerId: string, capMs: number): Promise<Background> {
  const t0 = process.hrtime.bigint();
  const elapsed = (): number => Number(process.hrtime.bigint() - t0) / 1e6;
  const found = (await announcerProcesses()).filter((p) => p.containerId === containerId);
  const pids = found.map((p) => p.pid);
  const roles = found.map((p) => p.argv.slice(1).find((a) => !a.startsWith('/')) ?? '?');
  let peakKiB = 0;
  let live = pids;
  while (live.length > 0 && elapsed() < capMs) {
    const seen = await Promise.all(live.map(peakRss));
    live = live.filter((_, i) => seen[i] !== undefined);
    for (const kib of seen) peakKiB = Math.max(peakKiB, kib ?? 0);
    if (live.length > 0) await sleep(POLL_MS);
  }
  return { roles, peakKiB, aliveMs: elapsed(), capped: live.length > 0 };
}
