// Programs compiled with the plugin's runtime and build options (scripts/build.mjs --entry), built
// afresh in each bench run: the runtime's floor (an empty program), the exchange's floor (one
// request to the announcer, none of the shim's work: exchange-floor-entry.ts), and an idle program.
import { execFileSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));

/** Compiles scripts/bench/`entry` to `out` as the plugin is compiled. */
function buildEntry(entry: string, out: string): void {
  const root = resolve(HERE, '../..');
  execFileSync(
    join(root, 'node_modules/.bin/bun'),
    [join(root, 'scripts/build.mjs'), `--entry=${join(HERE, entry)}`, `--out=${out}`],
    {
      cwd: root,
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
}

/**
 * Compiles scripts/bench/empty-entry.ts to `out` as the plugin is compiled: what a start costs before any plugin code
 * runs.
 */
export function buildRuntimeFloor(out: string): void {
  buildEntry('empty-entry.ts', out);
}

/** Compiles scripts/bench/exchange-floor-entry.ts to `out` as the plugin is compiled: one request and its answer. */
export function buildExchangeFloor(out: string): void {
  buildEntry('exchange-floor-entry.ts', out);
}

/** Compiles scripts/bench/idle-entry.ts to `out` as the plugin is compiled: a process asleep on one long timer. */
export function buildIdleProgram(out: string): void {
  buildEntry('idle-entry.ts', out);
}
