import { execFileSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  NotRegularFileError,
  readSmallFile,
  replaceFile,
  tempNameFor,
  unlinkIfPresent,
} from '../../../src/sys/safe-file';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'safe-file-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('replaceFile', () => {
  it('writes the file 0600 and leaves nothing else', () => {
    const file = replaceFile(dir, 'a.json', '{"x":1}\n');
    expect(file).toBe(join(dir, 'a.json'));
    expect(readFileSync(file, 'utf8')).toBe('{"x":1}\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['a.json']);
  });

  it('replaces a symlink planted at the name instead of writing through it', () => {
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'precious');
    symlinkSync(victim, join(dir, 'a.json'));
    replaceFile(dir, 'a.json', 'record');
    expect(readFileSync(victim, 'utf8')).toBe('precious');
    expect(statSync(join(dir, 'a.json')).isFile()).toBe(true);
    expect(readFileSync(join(dir, 'a.json'), 'utf8')).toBe('record');
  });

  it('removes its temporary file when the rename fails', () => {
    mkdirSync(join(dir, 'a.json'));
    writeFileSync(join(dir, 'a.json', 'keep'), '');
    expect(() => replaceFile(dir, 'a.json', 'record')).toThrow(/^EISDIR: .*rename '.*\.tmp' -> '.*\/a\.json'$/);
    expect(readdirSync(dir)).toEqual(['a.json']);
  });

  it('throws when the directory is missing, creating nothing', () => {
    expect(() => replaceFile(join(dir, 'missing'), 'a.json', 'x')).toThrow(/ENOENT/);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('tempNameFor', () => {
  it('is hidden, ends in .tmp, names the pid and differs per call', () => {
    const a = tempNameFor('a.json');
    expect(a).toMatch(new RegExp(`^\\.a\\.json\\.${process.pid}\\.[0-9a-f]{8}\\.tmp$`));
    expect(tempNameFor('a.json')).not.toBe(a);
  });
});

describe('readSmallFile', () => {
  it('reads a regular file and returns undefined for a missing one', () => {
    writeFileSync(join(dir, 'f'), 'hello');
    expect(readSmallFile(join(dir, 'f'), 100)).toBe('hello');
    expect(readSmallFile(join(dir, 'missing'), 100)).toBeUndefined();
  });

  it('refuses a symlink, a FIFO (without blocking), a directory and a file over the limit', () => {
    writeFileSync(join(dir, 'f'), 'x'.repeat(101));
    symlinkSync(join(dir, 'f'), join(dir, 'link'));
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    mkdirSync(join(dir, 'd'));
    expect(() => readSmallFile(join(dir, 'link'), 1000)).toThrow(NotRegularFileError);
    expect(() => readSmallFile(join(dir, 'fifo'), 1000)).toThrow(/not a regular file/);
    expect(() => readSmallFile(join(dir, 'd'), 1000)).toThrow(/not a regular file/);
    expect(() => readSmallFile(join(dir, 'f'), 100)).toThrow(/larger than 100 bytes/);
  });
});

describe('unlinkIfPresent', () => {
  it('removes a file, accepts a missing one, and throws for a directory', () => {
    writeFileSync(join(dir, 'f'), '');
    unlinkIfPresent(join(dir, 'f'));
    unlinkIfPresent(join(dir, 'f'));
    mkdirSync(join(dir, 'd'));
    expect(() => unlinkIfPresent(join(dir, 'd'))).toThrow(/^EISDIR: .*unlink '.*\/d'$/);
    expect(readdirSync(dir)).toEqual(['d']);
  });
});
