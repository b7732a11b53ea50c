// The id of a build (src/about.ts): it differs whenever the binary's bytes could, and the same
// sources give the same id, as they give the same bytes.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

/** What an id may look like: it goes into every request between a CNI call and the announcer. */
export const BUILD_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * One input of a build: its path relative to the checkout (so the checkout's own path does not count) and its bytes.
 */
export interface BuildInput {
  path: string;
  content: Uint8Array;
}

/**
 * The first 16 hex digits of sha256 over the inputs (sorted by path, each as path, length and bytes) and
 * the settings (Bun's version, the target, the flags: as sorted JSON).
 */
export function buildId(
  inputs: readonly BuildInput[],
  settings: Readonly<Record<string, string | number | boolean>>,
): string {
  const hash = createHash('sha256');
  for (const { path, content } of [...inputs].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    hash.update(`${path}\0${content.length}\0`).update(content);
  }
  const sorted = Object.fromEntries(Object.entries(settings).sort(([a], [b]) => (a < b ? -1 : 1)));
  hash.update(JSON.stringify(sorted));
  return hash.digest('hex').slice(0, 16);
}

/**
 * The files a build of `entry` reads from the checkout `root`: everything under src/, the entry, the
 * build's own scripts and the package files (package-lock.json pins every bundled package).
 */
export function buildInputs(root: string, entry: string): BuildInput[] {
  const files = new Set<string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(join(root, dir), { recursive: true }) as string[]) {
      if (statSync(join(root, dir, name)).isFile()) files.add(join(dir, name));
    }
  };
  walk('src');
  walk('scripts/build');
  for (const f of ['scripts/build.mjs', 'package.json', 'package-lock.json', relative(root, resolve(root, entry))])
    files.add(f);
  return [...files].map((path) => ({ path, content: readFileSync(join(root, path)) }));
}
