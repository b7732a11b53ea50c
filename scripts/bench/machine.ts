// What the bench's figures were measured on: the machine, its load, and
// which announcer binary (a compiled ELF or a script).
import { readFileSync, statSync } from 'node:fs';
import { cpus, loadavg, release } from 'node:os';
import type { Programs } from './rows';

/** What the announcer binary is: a compiled ELF or a script, and its size. */
export function announcerKind(path: string): string {
  const head = readFileSync(path).subarray(0, 4);
  const kind = head.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))
    ? 'ELF executable'
    : head.subarray(0, 2).toString() === '#!'
      ? 'script'
      : 'unknown format';
  return `${kind}, ${(statSync(path).size / 2 ** 20).toFixed(1)} MiB`;
}

/** A small file's trimmed text, or `fallback` if it cannot be read. */
function readOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return fallback;
  }
}

/** The load averages (1, 5, 15 min), and a warning when the machine is busier than its cores. */
export function loadLine(): string {
  const load = loadavg();
  const busy = load[0]! > cpus().length ? ` (busier than its ${cpus().length} cores: expect wide p25–p75 ranges)` : '';
  return `${load.map((l) => l.toFixed(2)).join(' ')}${busy}`;
}

/** The lines that say what the figures were measured on, and how. */
export function machineLines(p: Programs, warmup: number, rounds: number, rssRuns: number): string[] {
  return [
    `cni-announcer bench, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Linux ${release()}, ` +
      `rcu_expedited=${readOr('/sys/kernel/rcu_expedited', '?')}, load ${loadLine()}`,
    `node ${process.version} (${p.node}); announcer: ${p.announcer} (${announcerKind(p.announcer)})`,
    `${rounds} interleaved rounds after ${warmup} warm-up rounds; ` +
      `every command in a clean env (PATH and CNI_* only); peak RSS from GNU time %M, max of ${rssRuns} separate runs`,
  ];
}
