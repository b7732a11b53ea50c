// Fails, listing file:line, for any line wider than 120 characters in the .ts and .mjs files under the directories
// given as arguments (make lint passes `src scripts test`). No dependencies: plain Node.
//   node scripts/check-widths.mjs DIR...
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The widest line allowed, in characters (UTF-16 code units, as an editor's column counts them). */
const MAX_WIDTH = 120;

/** Every .ts and .mjs file under `dir`, node_modules left out. */
function sourceFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|mjs)$/.test(entry.name) ? [path] : [];
  });
}

const dirs = process.argv.slice(2);
if (dirs.length === 0) {
  console.error('usage: node scripts/check-widths.mjs DIR...');
  process.exit(2);
}
const wide = dirs.flatMap(sourceFiles).flatMap((file) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line, i) => (line.length > MAX_WIDTH ? [`${file}:${i + 1}: ${line.length} characters`] : [])),
);
for (const line of wide) console.error(line);
if (wide.length > 0) {
  console.error(`check-widths: ${wide.length} line(s) wider than ${MAX_WIDTH} characters`);
  process.exit(1);
}
