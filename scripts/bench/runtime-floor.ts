// The runtime's floor: an empty program compiled with the plugin's runtime and
// build options (scripts/build.mjs --entry), built afresh in each bench run.
import { execFileSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));

/**
 * Compiles scripts/bench/empty-entry.ts to `out` as the plugin is compiled: what a start costs before any plugin code
 * runs.
 */
export function buildRuntimeFloor(out: string): void {
  const root = resolve(HERE, '../..');
  execFileSync(
    join(root, 'node_modules/.bin/bun'),
    [join(root, 'scripts/build.mjs'), `--entry=${join(HERE, 'empty-entry.ts')}`, `--out=${out}`],
    {
      cwd: root,
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
}
