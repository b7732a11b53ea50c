import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireFileLock, type HeldLock, type LockDeps } from '../../../src/sys/file-lock';
import { loadLibc, type TryLock } from '../../../src/sys/libc';

const tryLock = loadLibc().tryLock;
const deps = (lock: TryLock = tryLock): LockDeps => ({
  tryLock: lock,
  now: () => performance.now(),
  sleep: (ms) => sleep(ms),
});

let dir: string;
let path: string;
const held: HeldLock[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'file-lock-'));
  path = join(dir, 'a.lock');
});
afterEach(() => {
  for (const l of held.splice(0)) l.release();
  rmSync(dir, { recursive: true, force: true });
});

async function take(timeoutMs: number, lockDeps = deps()): Promise<HeldLock | undefined> {
  const lock = await acquireFileLock(path, timeoutMs, lockDeps);
  if (lock) held.push(lock);
  return lock;
}

describe('acquireFileLock', () => {
  it('creates the lock file 0600 and takes the lock', async () => {
    expect(await take(0)).toBeDefined();
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('gives up after the timeout while another holds it, and gets it once released', async () => {
    const first = (await take(0))!;
    expect(await take(0)).toBeUndefined();
    expect(await take(30)).toBeUndefined();
    const waiting = take(5000);
    await sleep(20);
    first.release();
    expect(await waiting).toBeDefined();
  });

  it('removes the lock file on release with remove, and a later lock creates it again', async () => {
    (await take(0))!.release({ remove: true });
    expect(existsSync(path)).toBe(false);
    expect(await take(0)).toBeDefined();
    expect(existsSync(path)).toBe(true);
  });

  it('starts over when the file it locked was removed and replaced while it waited', async () => {
    const first = (await take(0))!;
    let other: Promise<HeldLock | undefined> | undefined;
    let calls = 0;
    // On the waiter's first attempt, before its flock: the holder removes the file
    // and leaves, and a third command locks a new file of the same name (the
    // part of acquireFileLock before its first await runs at the call).
    const racing: TryLock = (fd) => {
      if (calls++ === 0) {
        first.release({ remove: true });
        other = acquireFileLock(path, 0, deps());
      }
      return tryLock(fd);
    };
    // The waiter locks the old, nameless file: it must notice and start over, and the new file is held.
    const waiter = await take(100, deps(racing));
    const third = await other!;
    expect(third).toBeDefined();
    expect(waiter).toBeUndefined();
    third!.release();
    expect(await take(0)).toBeDefined();
  });

  it('never opens through a symlink at the lock path', async () => {
    writeFileSync(join(dir, 'victim'), 'precious');
    symlinkSync(join(dir, 'victim'), path);
    await expect(take(0)).rejects.toThrow(/ELOOP/);
    expect(readdirSync(dir).sort()).toEqual(['a.lock', 'victim']);
  });
});
