// A file's identity, against real files: one file by two paths, another file, and none.
import { linkSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileId, fileIdAt, fileIdOf, sameFile } from '../../../src/sys/file-id';
import { useTempDir } from '../../support/temp-dir';

let dir: string;
useTempDir('file-id-', (d) => (dir = d));

describe('file identity', () => {
  it('is one file through a hard link and a symlink, another for another file', () => {
    writeFileSync(join(dir, 'a'), '');
    writeFileSync(join(dir, 'b'), '');
    linkSync(join(dir, 'a'), join(dir, 'hard'));
    symlinkSync(join(dir, 'a'), join(dir, 'soft'));
    const a = fileId(join(dir, 'a'));
    expect(a).toEqual({ dev: statSync(dir).dev, ino: statSync(join(dir, 'a')).ino });
    expect(sameFile(a, fileId(join(dir, 'hard')))).toBe(true);
    expect(sameFile(a, fileIdAt(join(dir, 'soft')))).toBe(true);
    expect(sameFile(a, fileId(join(dir, 'b')))).toBe(false);
    expect(sameFile(a, { dev: a.dev + 1, ino: a.ino })).toBe(false);
  });

  it('is undefined where there is no file (fileIdAt), which matches only another undefined', () => {
    expect(() => fileId(join(dir, 'none'))).toThrow(/ENOENT/);
    expect(fileIdAt(join(dir, 'none'))).toBeUndefined();
    expect(sameFile(undefined, fileId(dir))).toBe(false);
    expect(sameFile(fileId(dir), undefined)).toBe(false);
    expect(sameFile(undefined, undefined)).toBe(true);
  });

  it('keeps dev and ino alone, as records do', () => {
    expect(fileIdOf(statSync(dir))).toEqual({ dev: statSync(dir).dev, ino: statSync(dir).ino });
    expect(Object.keys(fileIdOf(statSync(dir)))).toEqual(['dev', 'ino']);
  });
});
