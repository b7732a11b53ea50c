// Unix SOCK_SEQPACKET sockets: the background announcer's control socket.
// SEQPACKET keeps message boundaries (one JSON request, one reply), and
// SO_PEERCRED tells who is on the other end. Every fd is non-blocking: callers
// wait with poll(2) (Libc.pollIn) and a deadline. The structs are built here;
// libc.ts makes the calls.
import { ABI } from './abi/kernel-abi';
import { ENAMETOOLONG } from './errno';
import { SysError } from './sys-error';

const { AF_UNIX, SCM_RIGHTS, SOL_SOCKET, sockaddr_un: UN, msghdr: MSG, cmsghdr: CMSG, iovec: IOV } = ABI;
/** sun_path's bytes, less its NUL. */
export const SUN_PATH_MAX = UN.size - UN.sun_path - 1;

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
  const address = Buffer.alloc(UN.sun_path + bytes.length + 1);
  address.writeUInt16LE(AF_UNIX, UN.sun_family);
  bytes.copy(address, UN.sun_path);
  return address;
}

/** CMSG_ALIGN: control messages, and their data after the header, start at multiples of cmsghdr's alignment. */
const cmsgAlign = (n: number): number => Math.ceil(n / CMSG.align) * CMSG.align;
/** Where a control message's data starts (CMSG_DATA). */
const CMSG_HEADER = cmsgAlign(CMSG.size);
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
  const iov = Buffer.alloc(IOV.size);
  iov.writeBigUInt64LE(address(payload), IOV.iov_base);
  iov.writeBigUInt64LE(BigInt(payload.length), IOV.iov_len);
  const header = Buffer.alloc(MSG.size);
  header.writeBigUInt64LE(address(iov), MSG.msg_iov);
  header.writeBigUInt64LE(1n, MSG.msg_iovlen);
  if (control.length > 0) {
    header.writeBigUInt64LE(address(control), MSG.msg_control);
    header.writeBigUInt64LE(BigInt(control.length), MSG.msg_controllen);
  }
  return { header, received: () => rightsIn(control, Number(header.readBigUInt64LE(MSG.msg_controllen))), keep: [payload, iov, control] };
}

/** The SCM_RIGHTS control message carrying `fds` (empty when there are none). */
export function controlRights(fds: readonly number[]): Buffer {
  if (fds.length === 0) return Buffer.alloc(0);
  if (fds.length > MAX_FDS) throw new RangeError(`at most ${MAX_FDS} fds per message`);
  const length = CMSG_HEADER + 4 * fds.length;
  const control = Buffer.alloc(cmsgAlign(length));
  control.writeBigUInt64LE(BigInt(length), CMSG.cmsg_len);
  control.writeInt32LE(SOL_SOCKET, CMSG.cmsg_level);
  control.writeInt32LE(SCM_RIGHTS, CMSG.cmsg_type);
  fds.forEach((fd, i) => control.writeInt32LE(fd, CMSG_HEADER + 4 * i));
  return control;
}

/** The fds of an SCM_RIGHTS control message of `used` bytes. */
export function rightsIn(control: Buffer, used: number): number[] {
  if (used < CMSG_HEADER) return [];
  const length = Number(control.readBigUInt64LE(CMSG.cmsg_len));
  if (control.readInt32LE(CMSG.cmsg_level) !== SOL_SOCKET || control.readInt32LE(CMSG.cmsg_type) !== SCM_RIGHTS) return [];
  const count = Math.max(0, Math.floor((Math.min(length, used) - CMSG_HEADER) / 4));
  return Array.from({ length: count }, (_, i) => control.readInt32LE(CMSG_HEADER + 4 * i));
}
