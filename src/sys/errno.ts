// Linux errno names by number, and the errnos the code names, the same on
// every architecture we build for (x86-64 and arm64 use the generic table). A
// table of our own: node:os holds the same, but loading it cost every plugin
// run milliseconds and MiBs (see docs/design.md, "Code layout").

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
