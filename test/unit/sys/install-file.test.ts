import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dirProblem, installFile, isTempName, removeStaleTemps } from '../../../src/sys/install-file';

describe('installFile', () => {
  let base: string;
  let source: string;
  let dest: string;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'install-file-'));
    source = join(base, 'source');
    // More than one 1 MiB chunk, with a short last one.
    writeFileSync(source, Buffer.alloc((1 << 20) + 4097, 'ab'));
    dest = join(base, 'dest');
    mkdirSync(dest);
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('copies the bytes with the mode and leaves no temporary file', () => {
    expect(installFile(source, dest, 'announcer', 0o755)).toBe('installed');
    expect(readFileSync(join(dest, 'announcer')).equals(readFileSync(source))).toBe(true);
    expect(statSync(join(dest, 'announcer')).mode & 0o7777).toBe(0o755);
    expect(readdirSync(dest)).toEqual(['announcer']);
  });

  it('does nothing when the same bytes and mode are there (same inode afterwards)', () => {
    installFile(source, dest, 'announcer', 0o755);
    const before = statSync(join(dest, 'announcer')).ino;
    expect(installFile(source, dest, 'announcer', 0o755)).toBe('unchanged');
    expect(statSync(join(dest, 'announcer')).ino).toBe(before);
  });

  it.each([
    ['other bytes of the same size', (f: string) => writeFileSync(f, Buffer.alloc((1 << 20) + 4097, 'ac'))],
    ['a shorter file', (f: string) => writeFileSync(f, 'old')],
    [
      'the same bytes with another mode',
      (f: string, src: string) => (writeFileSync(f, readFileSync(src)), chmodSync(f, 0o700)),
    ],
  ])('replaces %s by a new inode', (_what, plant) => {
    const target = join(dest, 'announcer');
    plant(target, source);
    const before = statSync(target).ino;
    expect(installFile(source, dest, 'announcer', 0o755)).toBe('installed');
    expect(statSync(target).ino).not.toBe(before);
    expect(readFileSync(target).equals(readFileSync(source))).toBe(true);
    expect(readdirSync(dest)).toEqual(['announcer']);
  });

  it('replaces a symlink itself, never writing through it', () => {
    const victim = join(base, 'victim');
    writeFileSync(victim, 'keep me');
    symlinkSync(victim, join(dest, 'announcer'));
    expect(installFile(source, dest, 'announcer', 0o755)).toBe('installed');
    expect(lstatSync(join(dest, 'announcer')).isFile()).toBe(true);
    expect(readFileSync(victim, 'utf8')).toBe('keep me');
  });

  it('fails when the name is a directory, and removes its temporary file', () => {
    mkdirSync(join(dest, 'announcer'));
    expect(() => installFile(source, dest, 'announcer', 0o755)).toThrow(/EISDIR|ENOTEMPTY|EEXIST/);
    expect(readdirSync(dest)).toEqual(['announcer']);
  });

  it('fails on a missing source and creates nothing', () => {
    expect(() => installFile(join(base, 'nope'), dest, 'announcer', 0o755)).toThrow(/ENOENT/);
    expect(readdirSync(dest)).toEqual([]);
  });
});

describe('dirProblem', () => {
  it('tells a directory, a missing path and a file apart', () => {
    const base = mkdtempSync(join(tmpdir(), 'dir-problem-'));
    try {
      writeFileSync(join(base, 'file'), '');
      expect(dirProblem(base)).toBeUndefined();
      expect(dirProblem(join(base, 'missing'))).toBe('missing');
      expect(dirProblem(join(base, 'file'))).toBe('not a directory');
      expect(dirProblem(join(base, 'file', 'below'))).toBe('not a directory');
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});

describe('removeStaleTemps', () => {
  it('removes only old regular files named like its temporary files, and leaves young ones to their installer', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stale-temps-'));
    try {
      const now = Date.now();
      const old = (name: string) => {
        writeFileSync(join(dir, name), 'x');
        utimesSync(join(dir, name), new Date(now - 3_600_000), new Date(now - 3_600_000));
      };
      old('.announcer.tmp-0123456789ab');
      old('.announcer.tmp-nothex000000');
      old('.announcer.tmp-0123456789abc');
      old('.THIRD_PARTY_NOTICES.tmp-0123456789ab');
      old('announcer');
      writeFileSync(join(dir, '.announcer.tmp-ffffffffffff'), 'young');
      mkdirSync(join(dir, '.announcer.tmp-aaaaaaaaaaaa'));
      symlinkSync('/etc/hostname', join(dir, '.announcer.tmp-bbbbbbbbbbbb'));
      expect(removeStaleTemps(dir, 'announcer', 600_000, now)).toEqual(['.announcer.tmp-0123456789ab']);
      expect(readdirSync(dir).sort()).toEqual(
        [
          '.THIRD_PARTY_NOTICES.tmp-0123456789ab',
          '.announcer.tmp-0123456789abc',
          '.announcer.tmp-aaaaaaaaaaaa',
          '.announcer.tmp-bbbbbbbbbbbb',
          '.announcer.tmp-ffffffffffff',
          '.announcer.tmp-nothex000000',
          'announcer',
        ].sort(),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('recognises exactly the names installFile gives its temporary files', () => {
    expect(isTempName('.announcer.tmp-0a1b2c3d4e5f', 'announcer')).toBe(true);
    expect(isTempName('.announcer.tmp-0A1B2C3D4E5F', 'announcer')).toBe(false);
    expect(isTempName('.announcer.tmp-', 'announcer')).toBe(false);
    expect(isTempName('announcer.tmp-0a1b2c3d4e5f', 'announcer')).toBe(false);
  });
});
