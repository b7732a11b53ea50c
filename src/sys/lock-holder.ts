// Waiting for the holder of a flock(2) through poll(2): the holder is found in
// /proc/locks by the lock file's device and inode, and a pidfd of it
// (pidfd_open(2), Linux 5.3) polls readable once it exits. No process is
// signalled; the pidfd is only polled. Where no holder can be named (an older
// kernel, a holder in a pid namespace we cannot see, a pid gone or reused
// meanwhile), the wait is a bare poll(2) of `fallbackMs`, and the caller
// looks at the lock again.
import { fstatSync, readFileSync } from 'node:fs';
import type { Libc } from './libc';

/** What waiting for a holder needs. */
export interface LockHolderDeps {
  libc: Pick<Libc, 'pidfdOpen' | 'pollIn' | 'close'>;
  /** /proc/locks' text (injected for tests). */
  readLocks?: () => string;
}

/** How it went: the holder exited (or the time ran out), or none could be named and `fallbackMs` were waited. */
export type HolderWait = 'holder' | 'fallback';

/**
 * Blocks in poll(2) until the process holding the flock on `fd` exits or `ms` pass; with no nameable holder, for
 * `fallbackMs` (at most `ms`).
 */
export function waitForLockHolder(deps: LockHolderDeps, fd: number, ms: number, fallbackMs: number): HolderWait {
  const read = deps.readLocks ?? (() => readFileSync('/proc/locks', 'latin1'));
  const st = fstatSync(fd, { bigint: true });
  const key = lockKey(st.dev, st.ino);
  const pid = flockHolder(read(), key);
  const pidfd = pid === undefined ? undefined : openPidfd(deps.libc, pid);
  // The pid may have been reused between the read and the open: it must still hold the lock now.
  if (pidfd !== undefined && flockHolder(read(), key) === pid) {
    try {
      deps.libc.pollIn([pidfd], ms);
      return 'holder';
    } finally {
      deps.libc.close(pidfd);
    }
  }
  if (pidfd !== undefined) deps.libc.close(pidfd);
  deps.libc.pollIn([], Math.min(ms, fallbackMs));
  return 'fallback';
}

function openPidfd(libc: LockHolderDeps['libc'], pid: number): number | undefined {
  try {
    return libc.pidfdOpen(pid);
  } catch {
    return undefined; // ENOSYS (before 5.3), ESRCH (gone), EPERM
  }
}

/** How /proc/locks names a file: `MAJOR:MINOR:INODE`, the device numbers in hex of at least two digits. */
export function lockKey(dev: bigint, ino: bigint): string {
  // glibc's dev_t: major in bits 8-19 and 32-43, minor in bits 0-7 and 20-31.
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & 0xfffff000n);
  const minor = (dev & 0xffn) | ((dev >> 12n) & 0xffffff00n);
  const hex = (n: bigint): string => n.toString(16).padStart(2, '0');
  return `${hex(major)}:${hex(minor)}:${ino}`;
}

/** The pid of the one process holding a FLOCK on `key` in /proc/locks' `text`; undefined for none or several. */
export function flockHolder(text: string, key: string): number | undefined {
  const pids = new Set<number>();
  for (const line of text.split('\n')) {
    // "1: FLOCK  ADVISORY  WRITE 1234 00:1f:5678 0 EOF"; waiters are "1: -> FLOCK ...".
    const fields = line.trim().split(/\s+/);
    if (fields[1] !== 'FLOCK' || fields[5] !== key) continue;
    const pid = Number(fields[4]);
    if (Number.isInteger(pid) && pid > 0) pids.add(pid);
  }
  return pids.size === 1 ? [...pids][0] : undefined;
}
