// flockHolder against /proc/locks text, and announcerPid against a lock this test takes itself.
import { closeSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { flockHolder } from '../../../src/shim/lock-holder';

describe('flockHolder', () => {
  const LOCKS = [
    '1: POSIX  ADVISORY  WRITE 900 00:1a:77 0 EOF',
    '2: FLOCK  ADVISORY  WRITE 1234 103:02:5678 0 EOF',
    '2: -> FLOCK  ADVISORY  WRITE 4321 103:02:5678 0 EOF',
    '3: FLOCK  ADVISORY  WRITE 55 00:1a:5678 0 EOF',
  ].join('\n');

  it("names the FLOCK holder of the file's device and inode, not a waiter nor a POSIX lock", () => {
    // st_dev of 103:02 (major 0x103, minor 2), as glibc encodes it.
    const dev = 0x103 * 256 + 2;
    expect(flockHolder(LOCKS, dev, 5678)).toBe(1234);
    expect(flockHolder(LOCKS, 0x1a, 5678)).toBe(55);
    expect(flockHolder(LOCKS, 0x1a, 77)).toBeUndefined();
    expect(flockHolder('', dev, 5678)).toBeUndefined();
  });

  it("finds no holder for a file nobody locks, on this kernel's /proc/locks", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lock-holder-'));
    try {
      const file = join(dir, 'f');
      closeSync(openSync(file, 'w'));
      const { dev, ino } = statSync(file);
      const { readFileSync } = await import('node:fs');
      expect(flockHolder(readFileSync('/proc/locks', 'utf8'), dev, ino)).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
