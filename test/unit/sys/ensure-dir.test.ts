import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureDir } from '../../../src/sys/ensure-dir';

describe('ensureDir', () => {
  let base: string;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'ensure-dir-'));
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('creates missing parents with the mode and accepts an existing directory', () => {
    const dir = join(base, 'a', 'b', 'c');
    ensureDir(dir, 0o700);
    ensureDir(dir, 0o700);
    expect(statSync(dir).isDirectory()).toBe(true);
    expect(statSync(join(base, 'a')).mode & 0o777).toBe(0o700);
  });

  it('fails below a regular file instead of looping', () => {
    writeFileSync(join(base, 'file'), '');
    expect(() => ensureDir(join(base, 'file', 'x', 'y'), 0o700)).toThrow(/ENOTDIR/);
  });

  it('fails under procfs, where mkdir keeps answering ENOENT, instead of looping', () => {
    expect(() => ensureDir('/proc/x-nowhere/state', 0o700)).toThrow(
      "ENOENT: no such file or directory, mkdir '/proc/x-nowhere'",
    );
  });
});
