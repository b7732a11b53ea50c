// Waiting for a flock's holder through its pidfd: against the real kernel
// (/proc/locks, pidfd_open, poll) with a holder this test starts, and the
// parsing of /proc/locks on its own.
import { spawn } from 'node:child_process';
import { closeSync, fstatSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { flockHolder, lockKey, waitForLockHolder } from '../../../src/sys/lock-holder';
import { loadLibc } from '../../../src/sys/libc';

describe('flockHolder', () => {
  const text = [
    '1: FLOCK  ADVISORY  WRITE 4242 00:1f:77 0 EOF',
    '1: -> FLOCK  ADVISORY  WRITE 5151 00:1f:77 0 EOF',
    '2: POSIX  ADVISORY  WRITE 6161 00:1f:78 0 EOF',
    '3: FLOCK  ADVISORY  WRITE 7171 fd:00:77 0 EOF',
  ].join('\n');

  it('names the one holder of a FLOCK on the device and inode, never a waiter or a POSIX lock', () => {
    expect(flockHolder(text, '00:1f:77')).toBe(4242);
    expect(flockHolder(text, '00:1f:78')).toBeUndefined();
    expect(flockHolder(text, '00:1f:79')).toBeUndefined();
  });

  it('writes the device as the kernel does: major and minor in hex, two digits at least', () => {
    expect(lockKey(31n, 77n)).toBe('00:1f:77');
    expect(lockKey((253n << 8n) | 1n, 5n)).toBe('fd:01:5');
    // glibc's dev_t of major 0x1234, minor 0x5678: each split in two parts.
    const dev = (0x234n << 8n) | (0x1000n << 32n) | 0x78n | (0x5600n << 12n);
    expect(lockKey(dev, 1n)).toBe('1234:5678:1');
  });
});

describe('waitForLockHolder', () => {
  let dir: string;
  let fd: number;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'lock-holder-'));
    fd = openSync(join(dir, 'lock'), 'w');
  });
  afterEach(() => {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  });

  it('wakes once the holder exits, not at the end of its time', async () => {
    // A holder of ours that lets go by exiting after 400 ms.
    const holder = spawn('flock', ['-x', join(dir, 'lock'), 'sleep', '0.4'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => holder.once('exit', resolve));
    const st = fstatSync(fd, { bigint: true });
    const key = (): string => lockKey(st.dev, st.ino);
    const deadline = Date.now() + 5000;
    while (flockHolder(readFileSync('/proc/locks', 'latin1'), key()) === undefined && Date.now() < deadline) {
      await new Promise((r) => setImmediate(r));
    }
    expect(flockHolder(readFileSync('/proc/locks', 'latin1'), key())).toBeGreaterThan(0);
    const start = Date.now();
    expect(waitForLockHolder({ libc: loadLibc() }, fd, 20_000, 20)).toBe('holder');
    const waited = Date.now() - start;
    await exited;
    expect(waited).toBeLessThan(10_000); // woke at the exit (~0.4 s), long before its 20 s
  });

  it('with no holder to name, waits the fallback through poll(2), bounded by the time left', () => {
    const start = Date.now();
    expect(waitForLockHolder({ libc: loadLibc(), readLocks: () => '' }, fd, 5000, 30)).toBe('fallback');
    expect(Date.now() - start).toBeLessThan(2000);
  });
});
