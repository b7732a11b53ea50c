// Other processes, seen through /proc: the holder of a flock(2), as /proc/locks names it by the
// locked file's device and inode, and the holder's progress stamp on that file; and whether a pid
// still names a live process (its start time, field 22 of /proc/PID/stat: a pid alone can be
// recycled, a pid plus its start time cannot). The announcer waits for a holder through poll(2):
// a pidfd of it (pidfd_open(2), Linux 5.3) polls readable once it exits. No process is signalled
// here (the plugin's one signal: SIGKILL to a hung announcer, src/shim/replace-hung.ts); the
// pidfd is only polled. Where no holder can be named (a kernel without pidfd_open, a holder in a
// pid namespace we cannot see, a pid gone or reused meanwhile), the wait is a bare poll(2) of
// `fallbackMs`, and the caller looks at the lock again. The shim reads the holder on its failure
// path (src/shim/replace-hung.ts): nothing here loads FFI (Libc is injected).
import { fstatSync, futimesSync, readFileSync } from 'node:fs';
import type { Libc } from './libc';
import { attempt } from './sys-error';

/** How it went: the holder exited (or the time ran out), or none could be named and `fallbackMs` were waited. */
export type HolderWait = 'holder' | 'fallback';

/**
 * Blocks in poll(2) until the process holding the flock on `fd` exits or `ms` pass; with no nameable holder, for
 * `fallbackMs` (at most `ms`).
 */
export function waitForLockHolder(libc: Libc, fd: number, ms: number, fallbackMs: number): HolderWait {
  const st = fstatSync(fd, { bigint: true });
  const holder = (): number | undefined => flockHolder(readFileSync('/proc/locks', 'latin1'), st.dev, st.ino);
  const pid = holder();
  // No pidfd (ENOSYS before 5.3, ESRCH once gone, EPERM): no holder to wait for.
  const pidfd = pid === undefined ? undefined : attempt(() => libc.pidfdOpen(pid));
  if (pidfd !== undefined) {
    try {
      // The pid may have been reused between the read and the open: it must still hold the lock now.
      if (holder() === pid) {
        libc.pollIn([pidfd], ms);
        return 'holder';
      }
    } finally {
      libc.close(pidfd);
    }
  }
  libc.pollIn([], Math.min(ms, fallbackMs));
  return 'fallback';
}

/**
 * How /proc/locks names the file of st_dev `dev` and inode `ino`: `MAJOR:MINOR:INODE`, the device numbers in hex of at
 * least two digits (the kernel's MAJOR and MINOR, which statx reports), the inode in decimal.
 */
export function lockKey(dev: bigint, ino: bigint): string {
  // glibc's dev_t: major in bits 8-19 and 32-43, minor in bits 0-7 and 20-31.
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & 0xfffff000n);
  const minor = (dev & 0xffn) | ((dev >> 12n) & 0xffffff00n);
  const hex = (n: bigint): string => n.toString(16).padStart(2, '0');
  return `${hex(major)}:${hex(minor)}:${ino}`;
}

/**
 * The pid of the one process holding a FLOCK on the file of st_dev `dev` and inode `ino` (a bigint stat's), in
 * /proc/locks' `text`; undefined for none or several.
 */
export function flockHolder(text: string, dev: bigint, ino: bigint): number | undefined {
  const key = lockKey(dev, ino);
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

/**
 * The holder's progress stamp: sets the access and modification times of the lock file open on `fd` to `nowMs`
 * (wall-clock ms; futimens(2), as Node's futimes does), so a caller can tell a hung announcer from a busy one
 * (src/shim/replace-hung.ts). Throws its errno.
 */
export function stampFd(fd: number, nowMs: number): void {
  futimesSync(fd, nowMs / 1000, nowMs / 1000);
}

/** Linux's largest pid_max (PID_MAX_LIMIT, 2^22): no pid is above it. */
const PID_MAX_LIMIT = 4_194_304;

/**
 * The start time of `pid` if it is alive (not a zombie), else undefined; undefined too for a pid that cannot name a
 * process of ours (/proc is not read): not an integer from 2 (1 is init) to PID_MAX_LIMIT.
 */
export function processStartTime(pid: number): string | undefined {
  if (!Number.isInteger(pid) || pid < 2 || pid > PID_MAX_LIMIT) return undefined;
  const stat = attempt(() => readFileSync(`/proc/${pid}/stat`, 'latin1'));
  if (stat === undefined) return undefined; // gone
  // comm (field 2) may contain spaces and parentheses: split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
  const start = fields[19]; // field 22 overall; fields[] starts at field 3
  return start !== undefined && /^\d+$/.test(start) ? start : undefined;
}
