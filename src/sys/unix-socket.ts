// Unix SOCK_STREAM sockets: the announcer's socket, which CNI calls (the shim,
// src/shim) connect to. SO_PEERCRED tells who is on the other end. Every fd is
// non-blocking: the announcer waits with poll(2) (Libc.pollIn) and a deadline.
// The address is made here; libc.ts makes the calls. The shim takes the address
// from here too, so nothing here loads FFI, nor node:fs but for a long stateDir.
import { join } from '../path';
import { ANNOUNCER_SOCKET } from '../state-files';
import { ABI } from './abi/kernel-abi';
import type { FileId } from './file-id';
import type { Libc } from './libc';
import { ENAMETOOLONG, SysError } from './sys-error';

const { AF_UNIX, O_DIRECTORY, O_NOFOLLOW, O_PATH, sockaddr_un: UN } = ABI;
/** sun_path's bytes, less its NUL. */
export const SUN_PATH_MAX = UN.size - UN.sun_path - 1;

/** The unix socket calls of the announcer's socket (and libc's recv and close); each throws SysError on failure. */
export interface UnixSockets extends Pick<Libc, 'recvNow' | 'close'> {
  /** A non-blocking listening stream socket bound at `path` (which must not exist), mode 0600. */
  listen(path: string): number;
  /** One pending connection with its peer's credentials (SO_PEERCRED), or undefined when none is pending. */
  accept(fd: number): { fd: number; pid: number; uid: number } | undefined;
  /** A non-blocking stream socket connected to `path` (ENOENT or ECONNREFUSED when nobody listens). */
  connect(path: string): number;
  /**
   * Writes what fits of `bytes` without blocking: the count written (0 when the socket buffer is full). Never raises
   * SIGPIPE.
   */
  send(fd: number, bytes: Uint8Array): number;
  /**
   * shutdown(SHUT_RD) of a listening socket: no connection reaches it from then on (connect(2) gets ECONNREFUSED, as
   * the kernel checks under the lock it queues connections under); those already queued can still be accepted.
   */
  shutdownListener(fd: number): void;
  /** The identity of the socket file at `path` (lstat): what a listen() there bound. */
  socketFile(path: string): FileId;
  /** Removes the socket file at `path` only if it is still `file`: whether it did (false: another, or none). */
  removeSocketFile(path: string, file: FileId): boolean;
}

/** struct sockaddr_un for `path`; throws ENAMETOOLONG past sun_path's size. */
export function sockaddrUn(path: string): Buffer {
  const bytes = Buffer.from(path);
  if (bytes.length > SUN_PATH_MAX || bytes.includes(0)) throw new SysError(`unix socket path ${path}`, ENAMETOOLONG);
  const address = Buffer.alloc(UN.sun_path + bytes.length + 1);
  address.writeUInt16LE(AF_UNIX, UN.sun_family);
  bytes.copy(address, UN.sun_path);
  return address;
}

/**
 * Runs `use` with the address of stateDir's announcer socket: its path when sun_path holds it, else the same file
 * through an O_PATH fd of stateDir (/proc/self/fd/N/announcer.sock), held until `use` returns, or until the promise it
 * returns settles. Only a long path loads node:fs (the shim's usual path never does); its open throws.
 */
export function withSocketAddress<T>(stateDir: string, use: (address: string) => T): T {
  const direct = join(stateDir, ANNOUNCER_SOCKET);
  if (Buffer.byteLength(direct) <= SUN_PATH_MAX) return use(direct);
  const { closeSync, openSync } = require('node:fs') as typeof import('node:fs');
  const dir = openSync(stateDir, O_PATH | O_DIRECTORY | O_NOFOLLOW);
  let result: T;
  try {
    result = use(`/proc/self/fd/${dir}/${ANNOUNCER_SOCKET}`);
  } catch (err) {
    closeSync(dir);
    throw err;
  }
  if (result instanceof Promise) return result.finally(() => closeSync(dir)) as T;
  closeSync(dir);
  return result;
}
