// Syscall-side errors: every failure from koffi calls or the `netlink`
// package is turned into a SysError that carries the errno.
import { constants } from 'node:os';

// Some errnos have two names (EAGAIN/EWOULDBLOCK, ENOTSUP/EOPNOTSUPP): keep the first, the usual one.
const ERRNO_NAMES: ReadonlyMap<number, string> = new Map(
  Object.entries(constants.errno)
    .reverse()
    .map(([name, value]) => [value, name]),
);

/** A failed syscall or netlink request, with its errno and the operation that failed. */
export class SysError extends Error {
  override name = 'SysError';
  /** The errno number, e.g. 19 for ENODEV. */
  readonly errno: number;
  /** The errno name, e.g. "ENODEV". */
  readonly code: string;
  /** What was being done, e.g. "setns(/var/run/netns/pod)". */
  readonly operation: string;

  constructor(operation: string, errno: number, options?: { cause?: unknown }) {
    const code = ERRNO_NAMES.get(errno) ?? `errno ${errno}`;
    super(`${operation}: ${code}`, options);
    this.errno = errno;
    this.code = code;
    this.operation = operation;
  }
}

/** True when `e` is a SysError (checks name as well as the prototype). */
export function isSysError(e: unknown): e is SysError {
  return e instanceof SysError || (e instanceof Error && e.name === 'SysError');
}

/** True when `e` is a SysError with one of the given errno names. */
export function hasErrno(e: unknown, ...codes: string[]): boolean {
  return isSysError(e) && codes.includes(e.code);
}

/**
 * Wraps an error thrown by the `netlink` package. It throws plain
 * `Error("Request rejected: ENODEV")` for NLMSG_ERROR replies and
 * ErrnoException (with .errno) for socket errors; both become SysError.
 */
export function fromNetlinkError(operation: string, err: unknown): SysError {
  if (isSysError(err)) return err;
  if (err instanceof Error) {
    const withErrno = err as Error & { errno?: unknown };
    if (typeof withErrno.errno === 'number') return new SysError(operation, Math.abs(withErrno.errno), { cause: err });
    if (err.message === 'Timeout has been reached') return new SysError(operation, constants.errno.ETIMEDOUT, { cause: err });
    const match = /Request rejected: (E[A-Z0-9]+|-?\d+)/.exec(err.message);
    if (match) {
      const token = match[1]!;
      const errno = /^-?\d+$/.test(token) ? Math.abs(Number(token)) : (constants.errno as Record<string, number>)[token];
      if (errno !== undefined) return new SysError(operation, errno, { cause: err });
    }
  }
  return new SysError(operation, constants.errno.EIO, { cause: err });
}

/** Awaits a netlink request and rethrows failures as SysError. */
export async function netlinkCall<T>(operation: string, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (err) {
    throw fromNetlinkError(operation, err);
  }
}
