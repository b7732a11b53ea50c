import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendToRegularFile } from '../../../src/sys/append-file';
import { isSysError } from '../../../src/sys/sys-error';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'announcer-append-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

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

  it('refuses a FIFO without a reader at once instead of waiting for one', () => {
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(refusal(fifo)).toBe('EINVAL');
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

  it('refuses a directory and a device', () => {
    mkdirSync(join(dir, 'd'));
    expect(refusal(join(dir, 'd'))).toBe('EINVAL');
    expect(refusal('/dev/null')).toBe('EINVAL');
  });

  it('reports a missing parent with its errno', () => {
    expect(refusal(join(dir, 'missing', 'a.log'))).toBe('ENOENT');
  });
});
