// Unix SOCK_SEQPACKET sockets: the background announcer's control socket.
// SEQPACKET keeps message boundaries (one JSON request, one reply), and
// SO_PEERCRED tells who is on the other end. Every fd is non-blocking: callers
// wait with poll(2) (Libc.pollIn) and a deadline. The structs are built here;
// libc.ts makes the calls.
import { ENAMETOOLONG } from './errno';
import { SysError } from './sys-error';

/** The unix socket address family. */
export const AF_UNIX = 1;
/** The socket level of setsockopt(2) and control messages. */
export const SOL_SOCKET = 1;
/** sun_path holds 108 bytes, NUL included. */
const SUN_PATH_MAX = 107;

/** The unix socket calls of the control socket; each throws SysError on failure. */
export interface UnixSockets {
  /** A non-blocking listening socket bound at `path` (which must not exist), mode 0600. */
  listen(path: string): number;
  /** One pending connection with its peer's credentials (SO_PEERCRED), or undefined when none is pending. */
  accept(fd: number): { fd: number; pid: number; uid: number } | undefined;
  /** A non-blocking socket connected to `path` (ENOENT or ECONNREFUSED when nobody listens). */
  connect(path: string): number;
  /** Sends one message, with copies of `fds` attached (SCM_RIGHTS); false when the socket buffer is full (EAGAIN). */
  send(fd: number, message: Uint8Array, fds?: readonly number[]): boolean;
  /** Receives one message into `buf`: its length (0 at end of stream) and its fds (close-on-exec); undefined when none is pending. */
  receive(fd: number, buf: Uint8Array): { length: number; fds: number[] } | undefined;
  close(fd: number): void;
}

/** struct sockaddr_un for `path`; throws ENAMETOOLONG past sun_path's size. */
export function sockaddrUn(path: string): Buffer {
  const bytes = Buffer.from(path);
  if (bytes.length > SUN_PATH_MAX || bytes.includes(0)) throw new SysError(`unix socket path ${path}`, ENAMETOOLONG);
  const address = Buffer.alloc(2 + bytes.length + 1);
  address.writeUInt16LE(AF_UNIX, 0);
  bytes.copy(address, 2);
  return address;
}

// struct msghdr (x86_64 and aarch64): name, namelen, iov, iovlen, control, controllen, flags.
const MSGHDR_BYTES = 56;
const MSGHDR_IOV = 16;
const MSGHDR_IOVLEN = 24;
const MSGHDR_CONTROL = 32;
const MSGHDR_CONTROLLEN = 40;
const SCM_RIGHTS = 1;
/** struct cmsghdr: len (size_t), level, type, then data aligned to 8. */
const CMSG_HEADER = 16;
/** Room for a few attached fds. */
const MAX_FDS = 8;
const CONTROL_BYTES = CMSG_HEADER + 4 * MAX_FDS;

/**
 * A struct msghdr over `data` and, to send, the SCM_RIGHTS of `fds` (to receive: room for some).
 * Pointers are the addresses of the Buffers' memory, which stays put while the call runs; the
 * Buffers are returned with it so that they stay alive as long as the header is used.
 */
export function messageHeader(address: (b: Buffer) => bigint, data: Uint8Array, fds?: readonly number[]): { header: Buffer; received(): number[]; keep: Buffer[] } {
  const control = fds ? controlRights(fds) : Buffer.alloc(CONTROL_BYTES);
  const payload = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const iov = Buffer.alloc(16);
  iov.writeBigUInt64LE(address(payload), 0);
  iov.writeBigUInt64LE(BigInt(payload.length), 8);
  const header = Buffer.alloc(MSGHDR_BYTES);
  header.writeBigUInt64LE(address(iov), MSGHDR_IOV);
  header.writeBigUInt64LE(1n, MSGHDR_IOVLEN);
  if (control.length > 0) {
    header.writeBigUInt64LE(address(control), MSGHDR_CONTROL);
    header.writeBigUInt64LE(BigInt(control.length), MSGHDR_CONTROLLEN);
  }
  return { header, received: () => rightsIn(control, Number(header.readBigUInt64LE(MSGHDR_CONTROLLEN))), keep: [payload, iov, control] };
}

/** The SCM_RIGHTS control message carrying `fds` (empty when there are none). */
export function controlRights(fds: readonly number[]): Buffer {
  if (fds.length === 0) return Buffer.alloc(0);
  if (fds.length > MAX_FDS) throw new RangeError(`at most ${MAX_FDS} fds per message`);
  const length = CMSG_HEADER + 4 * fds.length;
  const control = Buffer.alloc((length + 7) & ~7);
  control.writeBigUInt64LE(BigInt(length), 0);
  control.writeInt32LE(SOL_SOCKET, 8);
  control.writeInt32LE(SCM_RIGHTS, 12);
  fds.forEach((fd, i) => control.writeInt32LE(fd, CMSG_HEADER + 4 * i));
  return control;
}

/** The fds of an SCM_RIGHTS control message of `used` bytes. */
export function rightsIn(control: Buffer, used: number): number[] {
  if (used < CMSG_HEADER) return [];
  const length = Number(control.readBigUInt64LE(0));
  if (control.readInt32LE(8) !== SOL_SOCKET || control.readInt32LE(12) !== SCM_RIGHTS) return [];
  const count = Math.max(0, Math.floor((Math.min(length, used) - CMSG_HEADER) / 4));
  return Array.from({ length: count }, (_, i) => control.readInt32LE(CMSG_HEADER + 4 * i));
}
