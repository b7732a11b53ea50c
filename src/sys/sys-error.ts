// Syscall-side errors: every failed koffi call or rtnetlink request, and the
// node:fs failures of a few callers, becomes a SysError that carries the errno;
// a failure of the runtime's unix stream (unix-stream.ts) a StreamError, with its errno name.
// Errno names come from a table of our own, the same on every architecture we
// build for (x86-64 and arm64 use the generic table): node:os holds the same,
// but it is one more builtin for a Bun run to load (see docs/design.md, "Few builtins").

/** errno: interrupted by a signal. */
export const EINTR = 4;
/** errno: I/O error; also stands for a failure that carries no errno. */
export const EIO = 5;
/** errno: try again (EWOULDBLOCK is the same number). */
export const EAGAIN = 11;
/** errno: invalid argument. */
export const EINVAL = 22;
/** errno: file name too long. */
export const ENAMETOOLONG = 36;
/** errno: connection timed out. */
export const ETIMEDOUT = 110;

// Index = errno; the usual name where there are two (EAGAIN, not EWOULDBLOCK; ENOTSUP, not
// EOPNOTSUPP); '' where Linux has none (41, 58).
const NAMES = (
  ' EPERM ENOENT ESRCH EINTR EIO ENXIO E2BIG ENOEXEC EBADF ECHILD EAGAIN ENOMEM EACCES EFAULT' +
  ' ENOTBLK EBUSY EEXIST EXDEV ENODEV ENOTDIR EISDIR EINVAL ENFILE EMFILE ENOTTY ETXTBSY EFBIG' +
  ' ENOSPC ESPIPE EROFS EMLINK EPIPE EDOM ERANGE EDEADLK ENAMETOOLONG ENOLCK ENOSYS ENOTEMPTY' +
  ' ELOOP  ENOMSG EIDRM ECHRNG EL2NSYNC EL3HLT EL3RST ELNRNG EUNATCH ENOCSI EL2HLT EBADE EBADR' +
  ' EXFULL ENOANO EBADRQC EBADSLT  EBFONT ENOSTR ENODATA ETIME ENOSR ENONET ENOPKG EREMOTE' +
  ' ENOLINK EADV ESRMNT ECOMM EPROTO EMULTIHOP EDOTDOT EBADMSG EOVERFLOW ENOTUNIQ EBADFD EREMCHG' +
  ' ELIBACC ELIBBAD ELIBSCN ELIBMAX ELIBEXEC EILSEQ ERESTART ESTRPIPE EUSERS ENOTSOCK' +
  ' EDESTADDRREQ EMSGSIZE EPROTOTYPE ENOPROTOOPT EPROTONOSUPPORT ESOCKTNOSUPPORT ENOTSUP' +
  ' EPFNOSUPPORT EAFNOSUPPORT EADDRINUSE EADDRNOTAVAIL ENETDOWN ENETUNREACH ENETRESET' +
  ' ECONNABORTED ECONNRESET ENOBUFS EISCONN ENOTCONN ESHUTDOWN ETOOMANYREFS ETIMEDOUT' +
  ' ECONNREFUSED EHOSTDOWN EHOSTUNREACH EALREADY EINPROGRESS ESTALE EUCLEAN ENOTNAM ENAVAIL' +
  ' EISNAM EREMOTEIO EDQUOT ENOMEDIUM EMEDIUMTYPE ECANCELED ENOKEY EKEYEXPIRED EKEYREVOKED' +
  ' EKEYREJECTED EOWNERDEAD ENOTRECOVERABLE ERFKILL EHWPOISON'
).split(' ');

const NUMBERS: ReadonlyMap<string, number> = new Map([
  ...NAMES.flatMap((name, errno): [string, number][] => (name ? [[name, errno]] : [])),
  ['EWOULDBLOCK', 11],
  ['EDEADLOCK', 35],
  ['EOPNOTSUPP', 95],
]);

/** The name of errno `n` (e.g. 19 → "ENODEV"), or undefined for a number Linux does not use. */
export function errnoName(n: number): string | undefined {
  return NAMES[n] || undefined;
}

/** The number of errno `name` (e.g. "ENODEV" → 19), or undefined for a name Linux does not use. */
export function errnoNumber(name: string): number | undefined {
  return NUMBERS.get(name);
}

/**
 * `call()`, or undefined when it throws (with `code` given, only when it throws that errno, as node:fs names it: any
 * other error is thrown). For a call whose failure only means there is nothing to see or do (a file gone, a process
 * exited), each caller saying so where it calls.
 */
export function attempt<T>(call: () => T, code?: string): T | undefined {
  try {
    return call();
  } catch (err) {
    if (code !== undefined && (err as NodeJS.ErrnoException).code !== code) throw err;
    return undefined;
  }
}

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

/**
 * A socket error, with its errno name (`code`, 'EIO' when the runtime gave none) and the runtime's error as `cause`.
 */
export class StreamError extends Error {
  override name = 'StreamError';
  constructor(
    message: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A StreamError for what the runtime threw or emitted: its `code` when it is an errno name. */
export function streamError(what: string, err: unknown): StreamError {
  const raw = (err as { code?: unknown } | null)?.code;
  const code = typeof raw === 'string' && /^E[A-Z0-9]+$/.test(raw) ? raw : 'EIO';
  const detail = err instanceof Error ? err.message : String(err);
  return new StreamError(`${what}: ${detail}`, code, { cause: err });
}
