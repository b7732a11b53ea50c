// How loadLibc's bound calls report: a negative return becomes a SysError with
// koffi's errno; "nothing pending" (EAGAIN, EINTR) becomes undefined; an fd
// being set up is closed when its set-up throws.
import { EAGAIN, EINTR, SysError } from './sys-error';

/** The checks every bound call goes through. */
export interface CallChecks {
  /** The return value; SysError(operation, errno) when negative. */
  check(operation: string, rc: number | bigint): number;
  /** check, but undefined when nothing is pending (EAGAIN, and EINTR unless `eintrFails`). */
  unlessPending(operation: string, rc: number | bigint, eintrFails?: boolean): number | undefined;
  /** The fd `work` returns; closed when `work` throws. */
  closing(fd: number, work: (fd: number) => void): number;
}

/** The checks over `errno` (koffi's, of the last call) and `close` (the raw close(2)). */
export function callChecks(errno: () => number, close: (fd: number) => unknown): CallChecks {
  const check = (operation: string, rc: number | bigint): number => {
    const value = Number(rc);
    if (value < 0) throw new SysError(operation, errno());
    return value;
  };
  return {
    check,
    unlessPending(operation, rc, eintrFails = false) {
      if (Number(rc) >= 0) return Number(rc);
      const e = errno();
      if (e === EAGAIN || (e === EINTR && !eintrFails)) return undefined;
      throw new SysError(operation, e);
    },
    closing(fd, work) {
      try {
        work(fd);
        return fd;
      } catch (err) {
        close(fd);
        throw err;
      }
    },
  };
}
