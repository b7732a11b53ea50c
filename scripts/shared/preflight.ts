// Checks a root script makes before it touches the node, each failure naming its fix.
import { accessSync, constants as fs } from 'node:fs';

/** Throws unless this process runs as root; `why` says what needs it. */
export function requireRoot(script: string, why: string): void {
  if (process.getuid?.() !== 0) throw new Error(`${script} needs root (${why})`);
}

/** Throws for the first [path, fix] whose path is not an executable file, with its fix. */
export function requireExecutables(needs: readonly (readonly [path: string, fix: string])[]): void {
  for (const [path, fix] of needs) {
    try {
      accessSync(path, fs.X_OK);
    } catch {
      throw new Error(`${path} is missing or not executable: ${fix}`);
    }
  }
}
