import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  appendToRegularFile,
  dirProblem,
  installFile,
  isTempName,
  NotRegularFileError,
  readSmallFile,
  removeStaleTemps,
  replaceFile,
  tempNameFor,
  unlinkIfPresent,
} from '../../../src/sys/safe-file';
import { isSysError } from '../../../src/sys/sys-error';
import { useTempDir } from '../../support/temp-dir';

let dir: string;
useTempDir('safe-file-', (d) => (dir = d));

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

function refusal(path: string): string {
  try {
    appendToRegularFile(path, 'line\n');
  } catch (e) {
    expect(isSysError(e)).toBe(true);
    return (e as { code: string }).code;
  }
  throw new Error('appendToRegularFile did not throw');
}

describe('appendToRegularFile', () => {
  it('creates a 0600 file and appends to it', () => {
    const file = join(dir, 'a.log');
    appendToRegularFile(file, 'one\n');
    appendToRegularFile(file, Buffer.from('two\n'));
    expect(readFileSync(file, 'utf8')).toBe('one\ntwo\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('writes nothing into a FIFO that has a reader', () => {
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      expect(refusal(fifo)).toBe('EINVAL');
      // No writer ever opened it: read(2) sees end of file, and nothing was written.
      expect(readSync(reader, Buffer.alloc(16))).toBe(0);
    } finally {
      closeSync(reader);
    }
  });

  it('does not follow a symlink to another file', () => {
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'keep\n');
    symlinkSync(victim, join(dir, 'link.log'));
    expect(refusal(join(dir, 'link.log'))).toBe('EINVAL');
    expect(readFileSync(victim, 'utf8')).toBe('keep\n');
  });

  const refusalsTitle =
    'refuses a FIFO without a reader at once instead of waiting for one, a directory and a device (EINVAL); a ' +
    'missing parent is reported with its errno';
  it(refusalsTitle, () => {
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    mkdirSync(join(dir, 'd'));
    const paths = [join(dir, 'fifo'), join(dir, 'd'), '/dev/null', join(dir, 'missing', 'a.log')];
    expect(paths.map(refusal)).toEqual(['EINVAL', 'EINVAL', 'EINVAL', 'ENOENT']);
  });
});

describe('installFile', () => {
  let source: string;
  let dest: string;
  beforeEach(() => {
    source = join(dir, 'source');
    // More than one 1 MiB chunk, with a short last one.
    writeFileSync(source, Buffer.alloc((1 << 20) + 4097, 'ab'));
    dest = join(dir, 'dest');
    mkdirSync(dest);
  });

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
    const victim = join(dir, 'victim');
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
    expect(() => installFile(join(dir, 'nope'), dest, 'announcer', 0o755)).toThrow(/ENOENT/);
    expect(readdirSync(dest)).toEqual([]);
  });
});

describe('dirProblem', () => {
  it('tells a directory, a missing path and a file apart', () => {
    writeFileSync(join(dir, 'file'), '');
    expect(dirProblem(dir)).toBeUndefined();
    expect(dirProblem(join(dir, 'missing'))).toBe('missing');
    expect(dirProblem(join(dir, 'file'))).toBe('not a directory');
    expect(dirProblem(join(dir, 'file', 'below'))).toBe('not a directory');
  });
});

describe('removeStaleTemps', () => {
  it('removes only old regular files named like its temporary files, and leaves young ones to their installer', () => {
    const now = Date.now();
    const old = ['.announcer.tmp-0123456789ab', '.announcer.tmp-nothex000000', '.announcer.tmp-0123456789abc'];
    for (const name of [...old, '.THIRD_PARTY_NOTICES.tmp-0123456789ab', 'announcer']) {
      writeFileSync(join(dir, name), 'x');
      utimesSync(join(dir, name), new Date(now - 3_600_000), new Date(now - 3_600_000));
    }
    writeFileSync(join(dir, '.announcer.tmp-ffffffffffff'), 'young');
    mkdirSync(join(dir, '.announcer.tmp-aaaaaaaaaaaa'));
    symlinkSync('/etc/hostname', join(dir, '.announcer.tmp-bbbbbbbbbbbb'));
    const kept = readdirSync(dir).filter((name) => name !== old[0]);
    expect(removeStaleTemps(dir, 'announcer', 600_000, now)).toEqual([old[0]]);
    expect(readdirSync(dir).sort()).toEqual(kept.sort());
  });

  it('recognises exactly the names installFile gives its temporary files', () => {
    const names = [
      '.announcer.tmp-0a1b2c3d4e5f',
      '.announcer.tmp-0A1B2C3D4E5F',
      '.announcer.tmp-',
      'announcer.tmp-0a1b2c3d4e5f',
    ];
    expect(names.map((name) => isTempName(name, 'announcer'))).toEqual([true, false, false, false]);
  });
});
