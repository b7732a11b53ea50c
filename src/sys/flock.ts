// flock(2) through koffi: Node has no file locks. Bound on first use, apart
// from libc.ts, so that commands that never lock never bind it.
import { loadKoffi } from './koffi';
import { EAGAIN, EINTR } from './libc';
import { SysError } from './sys-error';

const LOCK_EX = 2;
const LOCK_NB = 4;

/** flock(fd, LOCK_EX|LOCK_NB), never blocking: false when another open file holds the lock; it goes with the open file (close releases it). */
export type TryLock = (fd: number) => boolean;

/** Binds flock(2) from libc and returns a TryLock. */
export function loadTryLock(): TryLock {
  const koffi = loadKoffi();
  const flock = koffi.load('libc.so.6').func('int flock(int fd, int operation)');
  return (fd) => {
    for (;;) {
      if (flock(fd, LOCK_EX | LOCK_NB) === 0) return true;
      const errno = koffi.errno();
      if (errno === EAGAIN) return false; // EWOULDBLOCK
      if (errno !== EINTR) throw new SysError('flock', errno);
    }
  };
}
