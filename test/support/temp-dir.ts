// A fresh directory for each test of a file or describe block.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';

/** Before each test, makes a directory `<tmpdir>/<prefix>XXXXXX` and hands it to `use`; after it, removes it. */
export function useTempDir(prefix: string, use: (dir: string) => void): void {
  let dir: string | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
    use(dir);
  });
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });
}
