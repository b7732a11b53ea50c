// An exclusive lock on a lock file, bounded in time. The lock file may be
// removed by whoever holds it (DEL does, so that stateDir does not grow): a
// waiter then ends up holding a lock on a file that no longer has a name, and
// someone else may lock a new file of the same name. So after each lock the
// file under the name is compared with the one locked (device and inode) and,
// when they differ, the waiter starts over on the new file.
import { closeSync, fstatSync, lstatSync, openSync } from 'node:fs';
import { ABI } from './abi/kernel-abi';
import type { TryLock } from './libc';
import { unlinkIfPresent } from './safe-file';

const { O_CREAT, O_NOFOLLOW, O_RDWR } = ABI;

/** Longest pause between two attempts, in ms. */
const MAX_PAUSE_MS = 50;

/** A lock this process holds. */
export interface HeldLock {
  readonly path: string;
  /** Releases the lock; with `remove`, first removes the lock file (while still holding it). Never throws. */
  release(opts?: { remove?: boolean }): void;
}

/** What acquireFileLock needs: flock, a monotonic clock in ms and a sleep. */
export interface LockDeps {
  tryLock: TryLock;
  now(): number;
  sleep(ms: number): Promise<void>;
}

/**
 * Takes the lock on `path` (created 0600, never through a symlink), retrying without blocking up to `timeoutMs`;
 * undefined when it stays held.
 */
export async function acquireFileLock(path: string, timeoutMs: number, deps: LockDeps): Promise<HeldLock | undefined> {
  const deadline = deps.now() + timeoutMs;
  for (let pause = 1; ; pause = Math.min(pause * 2, MAX_PAUSE_MS)) {
    const fd = openSync(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0o600);
    let locked = false;
    try {
      locked = deps.tryLock(fd);
      if (locked && isSameFile(fd, path)) return heldLock(path, fd);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    closeSync(fd);
    const left = deadline - deps.now();
    if (left <= 0) return undefined;
    // Locked a file that lost its name meanwhile: the holder is gone, try the new file at once.
    if (!locked) await deps.sleep(Math.min(pause, left));
  }
}

/** Whether the open `fd` is still the file named `path` (not removed or replaced since it was opened). */
function isSameFile(fd: number, path: string): boolean {
  const open = fstatSync(fd);
  if (open.nlink === 0) return false;
  try {
    const named = lstatSync(path);
    return named.dev === open.dev && named.ino === open.ino;
  } catch {
    return false;
  }
}

function heldLock(path: string, fd: number): HeldLock {
  let released = false;
  return {
    path,
    release(opts = {}) {
      if (released) return;
      released = true;
      try {
        if (opts.remove) unlinkIfPresent(path);
      } catch {
        // The lock file stays; the next holder can still use it.
      }
      try {
        closeSync(fd);
      } catch {
        // close(2) releases the lock even when it reports an error.
      }
    },
  };
}
