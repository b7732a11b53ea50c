// A flock's holder in /proc/locks, on its own and against the real kernel (a lock this process
// takes, and a holder this test starts); waiting for that holder through its pidfd (pidfd_open,
// poll); the holder's progress stamp; and a pid's start time.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, copyFileSync, existsSync, fstatSync, openSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadLibc } from '../../../src/sys/libc';
import { flockHolder, lockKey, processStartTime, stampFd, waitForLockHolder } from '../../../src/sys/lock-holder';
import { useTempDir } from '../../support/temp-dir';

const libc = loadLibc();
const locks = (): string => readFileSync('/proc/locks', 'latin1');

let dir: string;
let fd: number;
useTempDir('lock-holder-', (d) => {
  dir = d;
  fd = openSync(join(dir, 'lock'), 'w');
});
afterEach(() => closeSync(fd));

describe('flockHolder', () => {
  const text = [
    '1: FLOCK  ADVISORY  WRITE 4242 00:1f:77 0 EOF',
    '1: -> FLOCK  ADVISORY  WRITE 5151 00:1f:77 0 EOF',
    '2: POSIX  ADVISORY  WRITE 6161 00:1f:78 0 EOF',
    '3: FLOCK  ADVISORY  WRITE 7171 fd:00:77 0 EOF',
  ].join('\n');

  it('names the one holder of a FLOCK on the device and inode, never a waiter or a POSIX lock', () => {
    expect(flockHolder(text, 31n, 77n)).toBe(4242);
    expect(flockHolder(text, 31n, 78n)).toBeUndefined();
    expect(flockHolder(text, 31n, 79n)).toBeUndefined();
    const LOCKS = [
      '1: POSIX  ADVISORY  WRITE 900 00:1a:77 0 EOF',
      '2: FLOCK  ADVISORY  WRITE 1234 103:02:5678 0 EOF',
      '2: -> FLOCK  ADVISORY  WRITE 4321 103:02:5678 0 EOF',
      '3: FLOCK  ADVISORY  WRITE 55 00:1a:5678 0 EOF',
    ].join('\n');
    // st_dev of 103:02 (major 0x103, minor 2), as glibc encodes it.
    const dev = 0x103n * 256n + 2n;
    expect(flockHolder(LOCKS, dev, 5678n)).toBe(1234);
    expect(flockHolder(LOCKS, 0x1an, 5678n)).toBe(55);
    expect(flockHolder(LOCKS, 0x1an, 77n)).toBeUndefined();
    expect(flockHolder('', dev, 5678n)).toBeUndefined();
  });

  it('names no one when two processes hold the file (shared locks): none of them alone is the holder', () => {
    const shared = ['1: FLOCK  ADVISORY  READ 10 00:1f:77 0 EOF', '2: FLOCK  ADVISORY  READ 11 00:1f:77 0 EOF'];
    expect(flockHolder(shared.join('\n'), 31n, 77n)).toBeUndefined();
  });

  it('writes the device as the kernel does: major and minor in hex, two digits at least', () => {
    expect(lockKey(31n, 77n)).toBe('00:1f:77');
    expect(lockKey((253n << 8n) | 1n, 5n)).toBe('fd:01:5');
    // glibc's dev_t of major 0x1234, minor 0x5678: each split in two parts.
    const dev = (0x234n << 8n) | (0x1000n << 32n) | 0x78n | (0x5600n << 12n);
    expect(lockKey(dev, 1n)).toBe('1234:5678:1');
  });

  const realTitle =
    "finds this process holding a flock it took, and no one for a file nobody locks, in this kernel's /proc/locks";
  it(realTitle, () => {
    const st = fstatSync(fd, { bigint: true });
    expect(flockHolder(locks(), st.dev, st.ino)).toBeUndefined();
    expect(libc.tryLock(fd)).toBe(true);
    expect(flockHolder(locks(), st.dev, st.ino)).toBe(process.pid);
    const other = openSync(join(dir, 'other'), 'w');
    try {
      const { dev, ino } = fstatSync(other, { bigint: true });
      expect(flockHolder(locks(), dev, ino)).toBeUndefined();
    } finally {
      closeSync(other);
    }
  });
});

describe('waitForLockHolder', () => {
  it('wakes once the holder exits, not at the end of its time', async () => {
    // A holder of ours that lets go by exiting after 400 ms.
    const holder = spawn('flock', ['-x', join(dir, 'lock'), 'sleep', '0.4'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => holder.once('exit', resolve));
    const st = fstatSync(fd, { bigint: true });
    const deadline = Date.now() + 5000;
    while (flockHolder(locks(), st.dev, st.ino) === undefined && Date.now() < deadline) {
      await new Promise((r) => setImmediate(r));
    }
    expect(flockHolder(locks(), st.dev, st.ino)).toBeGreaterThan(0);
    const start = Date.now();
    expect(waitForLockHolder(libc, fd, 20_000, 20)).toBe('holder');
    const waited = Date.now() - start;
    await exited;
    expect(waited).toBeLessThan(10_000); // woke at the exit (~0.4 s), long before its 20 s
  });

  it('with no holder to name, waits the fallback through poll(2), bounded by the time left', () => {
    const unlocked = openSync(join(dir, 'unlocked'), 'w');
    try {
      const start = Date.now();
      expect(waitForLockHolder(libc, unlocked, 5000, 30)).toBe('fallback');
      expect(Date.now() - start).toBeLessThan(2000);
    } finally {
      closeSync(unlocked);
    }
  });
});

describe('stampFd', () => {
  it("sets the open file's modification and access times to the given wall-clock ms", () => {
    const at = Date.UTC(2030, 0, 2, 3, 4, 5, 678);
    stampFd(fd, at);
    const st = statSync(join(dir, 'lock'));
    expect([st.mtimeMs, st.atimeMs].map(Math.round)).toEqual([at, at]); // within float rounding
  });
});

/** Above the largest pid_max (2^22): no process can have it. */
const NO_SUCH_PID = 2 ** 22 + 12345;

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Runs fn with the pid of `command 30`, killed afterwards. */
async function withChild(command: string, fn: (pid: number) => Promise<void>): Promise<void> {
  const child = spawn(command, ['30'], { stdio: 'ignore' });
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    await fn(child.pid!);
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited(child);
    }
  }
}

describe('processStartTime', () => {
  let dir: string;
  useTempDir('announcer-proc-', (d) => (dir = d));

  it('is a string of digits for this process', () => {
    expect(processStartTime(process.pid)).toMatch(/^\d+$/);
  });

  it('is undefined for a pid that does not exist', () => {
    expect(processStartTime(NO_SUCH_PID)).toBeUndefined();
  });

  it('reads field 22 even when the command name holds spaces and parentheses', async () => {
    const odd = join(dir, 'a) b (c');
    copyFileSync('/bin/sleep', odd);
    chmodSync(odd, 0o755);
    const mine = Number(processStartTime(process.pid));
    await withChild(odd, async (pid) => {
      const start = processStartTime(pid);
      expect(start).toMatch(/^\d+$/);
      // Started after this process; a split on the first ')' would read num_threads ("1") instead.
      expect(Number(start)).toBeGreaterThanOrEqual(mine);
    });
  });
});

describe('never a pid that is not one process', () => {
  it('processStartTime does not read /proc for a pid outside 2 to 2^22, or not an integer (init, 1, included)', () => {
    for (const bad of [-1, 0, 1, -4242, 2 ** 22 + 1, 1.5, Number.NaN, Infinity]) {
      expect(processStartTime(bad), `${bad}`).toBeUndefined();
    }
    // The lowest pid it takes: 2 (kthreadd, where this pid namespace shows it).
    if (existsSync('/proc/2/stat')) expect(processStartTime(2)).toMatch(/^\d+$/);
  });
});
