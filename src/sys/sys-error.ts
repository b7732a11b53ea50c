// Syscall-side errors: every failed koffi call or rtnetlink request, and the
// node:fs failures of a few callers, becomes a SysError that carries the errno.
import { EIO, errnoName, errnoNumber } from './errno';

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
    const code = errnoName(errno) ?? `errno ${errno}`;
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
 * A failed node:fs call as a SysError: `err` itself when it is one, else one with its errno (EIO when its code names
 * none).
 */
export function sysErrorFrom(operation: string, err: unknown): SysError {
  if (err instanceof SysError) return err;
  const code = (err as NodeJS.ErrnoException).code;
  return new SysError(operation, (code === undefined ? undefined : errnoNumber(code)) ?? EIO, { cause: err });
}
