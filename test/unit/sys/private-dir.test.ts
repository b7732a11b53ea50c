import { chmodSync, chownSync, mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  checkPrivateDir,
  ensureDir,
  ensurePrivateDir,
  stateDirProblem,
  UnsafeDirError,
} from '../../../src/sys/private-dir';
import { notRoot, skipUnless } from '../../support/skip';
import { useTempDir } from '../../support/temp-dir';

const uid = process.geteuid!();
let base: string;
useTempDir('private-dir-', (d) => (base = d));

describe('checkPrivateDir', () => {
  it('accepts a 0700 directory of this uid under a sticky /tmp, and reports a missing one', () => {
    const dir = join(base, 'state');
    mkdirSync(dir, { mode: 0o700 });
    expect(checkPrivateDir(dir)).toBe('ok');
    expect(checkPrivateDir(join(base, 'missing'))).toBe('missing');
  });

  it('refuses a directory group or others can write, saying chmod 0700', () => {
    const dir = join(base, 'state');
    mkdirSync(dir);
    chmodSync(dir, 0o1777);
    expect(() => checkPrivateDir(dir)).toThrow(UnsafeDirError);
    expect(() => checkPrivateDir(dir)).toThrow(`${dir} is writable by group or others (mode 1777): chmod 0700 ${dir}`);
    chmodSync(dir, 0o770);
    expect(() => checkPrivateDir(dir)).toThrow(/chmod 0700/);
  });

  it('refuses a directory another uid owns, saying chown', () => {
    const dir = join(base, 'state');
    mkdirSync(dir, { mode: 0o700 });
    const expected = `${dir} is owned by uid ${uid}, not ${uid + 1}: chown ${uid + 1} ${dir} and chmod 0700 ${dir}`;
    expect(() => checkPrivateDir(dir, uid + 1)).toThrow(expected);
  });

  it.skipIf(skipUnless('root (to chown to another uid)', notRoot()))(
    'says "chown root" when root runs it on a directory another uid owns',
    () => {
      const dir = join(base, 'state');
      mkdirSync(dir, { mode: 0o700 });
      chownSync(dir, 1000, 1000);
      const wanted = `${dir} is owned by uid 1000, not root: chown root ${dir} and chmod 0700 ${dir}`;
      expect(() => checkPrivateDir(dir)).toThrow(wanted);
    },
  );

  it('refuses a regular file and a symlink', () => {
    writeFileSync(join(base, 'file'), '');
    expect(() => checkPrivateDir(join(base, 'file'))).toThrow(/is not a directory/);
    mkdirSync(join(base, 'real'), { mode: 0o700 });
    symlinkSync(join(base, 'real'), join(base, 'link'));
    expect(() => checkPrivateDir(join(base, 'link'))).toThrow(/is a symbolic link/);
  });

  it('refuses a directory whose parent others can write without the sticky bit', () => {
    const parent = join(base, 'open');
    mkdirSync(parent);
    chmodSync(parent, 0o777);
    mkdirSync(join(parent, 'state'), { mode: 0o700 });
    expect(() => checkPrivateDir(join(parent, 'state'))).toThrow(
      `its parent ${parent} is writable by others without the sticky bit (mode 0777): chmod go-w ${parent}`,
    );
    chmodSync(parent, 0o1777);
    expect(checkPrivateDir(join(parent, 'state'))).toBe('ok');
  });

  it.skipIf(skipUnless('root (to chown to another uid)', notRoot()))(
    'refuses a directory whose parent another user owns',
    () => {
      const parent = join(base, 'theirs');
      mkdirSync(parent, { mode: 0o755 });
      mkdirSync(join(parent, 'state'), { mode: 0o700 });
      chownSync(parent, 1000, 1000);
      expect(() => checkPrivateDir(join(parent, 'state'))).toThrow(/its parent .* is owned by uid 1000/);
    },
  );

  it('passes other errors through (ENOTDIR below a file, ENAMETOOLONG)', () => {
    writeFileSync(join(base, 'file'), '');
    expect(() => checkPrivateDir(join(base, 'file', 'state'))).toThrow(/ENOTDIR/);
    expect(() => checkPrivateDir(join(base, 'x'.repeat(300)))).toThrow(/ENAMETOOLONG/);
  });
});

describe('ensurePrivateDir', () => {
  it('creates the directory and its parents 0700, then accepts it', () => {
    const dir = join(base, 'a', 'state');
    ensurePrivateDir(dir);
    expect(statSync(dir).mode & 0o7777).toBe(0o700);
    ensurePrivateDir(dir);
  });

  it('does not fix an unsafe directory: it refuses it', () => {
    const dir = join(base, 'state');
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    expect(() => ensurePrivateDir(dir)).toThrow(UnsafeDirError);
    expect(statSync(dir).mode & 0o777).toBe(0o777);
  });
});

describe('stateDirProblem', () => {
  it('passes an unsafe directory on as such', () => {
    expect(
      stateDirProblem('/x', new UnsafeDirError('/x is writable by group or others (mode 0770): chmod 0700 /x')),
    ).toBe('unsafe stateDir: /x is writable by group or others (mode 0770): chmod 0700 /x');
  });

  it('names the directory and the error otherwise, also one that is no Error', () => {
    const expected = 'cannot use stateDir /x: EROFS: read-only file system';
    expect(stateDirProblem('/x', new Error('EROFS: read-only file system'))).toBe(expected);
    expect(stateDirProblem('/x', 'EIO')).toBe('cannot use stateDir /x: EIO');
  });

  it('shortens a stateDir longer than 200 characters and a message longer than 300', () => {
    const dir200 = `/${'d'.repeat(199)}`;
    const msg300 = 'm'.repeat(300);
    expect(stateDirProblem(dir200, new Error(msg300))).toBe(`cannot use stateDir ${dir200}: ${msg300}`);
    const wanted = `cannot use stateDir ${dir200}… (201 characters): ${msg300}…`;
    expect(stateDirProblem(`${dir200}e`, new Error(`${msg300}n`))).toBe(wanted);
  });
});

describe('ensureDir', () => {
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
    const text = "ENOENT: no such file or directory, mkdir '/proc/x-nowhere'";
    expect(() => ensureDir('/proc/x-nowhere/state', 0o700)).toThrow(text);
  });
});
