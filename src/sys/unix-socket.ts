// Unix SOCK_SEQPACKET sockets through koffi: the background announcer's
// control socket. SEQPACKET keeps message boundaries (one JSON request, one
// reply), and SO_PEERCRED tells who is on the other end. Every fd is
// non-blocking: callers wait with poll(2) (Libc.pollIn) and a deadline.
import { chmodSync } from 'node:fs';
import { loadKoffi } from './koffi';
import { EAGAIN, EINTR, SOCK_CLOEXEC, SOCK_NONBLOCK } from './libc';
import { SysError } from './sys-error';

const AF_UNIX = 1;
const SOCK_SEQPACKET = 5;
const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
const MSG_NOSIGNAL = 0x4000;
/** sun_path holds 108 bytes, NUL included. */
const SUN_PATH_MAX = 107;
const BACKLOG = 128;

/** Who is at the other end of an accepted connection (SO_PEERCRED). */
export interface Peer {
  fd: number;
  pid: number;
  uid: number;
}

/** The unix socket calls of the control socket; each throws SysError on failure. */
export interface UnixSockets {
  /** A non-blocking listening socket bound at `path` (which must not exist), mode 0600. */
  listen(path: string): number;
  /** One pending connection with its peer's credentials, or undefined when none is pending. */
  accept(fd: number): Peer | undefined;
  /** A non-blocking socket connected to `path` (ENOENT or ECONNREFUSED when nobody listens). */
  connect(path: string): number;
  /** Sends one message, with copies of `fds` attached (SCM_RIGHTS); false when the socket buffer is full (EAGAIN). */
  send(fd: number, message: Uint8Array, fds?: readonly number[]): boolean;
  /**
   * Receives one message into `buf`: its length (0 at end of stream) and the
   * fds attached to it (close-on-exec), or undefined when none is pending.
   */
  receive(fd: number, buf: Uint8Array): { length: number; fds: number[] } | undefined;
  close(fd: number): void;
}

/** struct sockaddr_un for `path`; throws ENAMETOOLONG past sun_path's size. */
export function sockaddrUn(path: string): Buffer {
  const bytes = Buffer.from(path);
  if (bytes.length > SUN_PATH_MAX || bytes.includes(0)) throw new SysError(`unix socket path ${path}`, 36);
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
const MSG_CMSG_CLOEXEC = 0x40000000;
/** struct cmsghdr: len (size_t), level, type, then data aligned to 8. */
const CMSG_HEADER = 16;
/** Room for a few attached fds. */
const MAX_FDS = 8;
const CONTROL_BYTES = CMSG_HEADER + 4 * MAX_FDS;

/**
 * A struct msghdr over `data` and `control`. Pointers are the addresses of
 * the Buffers' memory, which stays put while the call runs; the Buffers are
 * returned with it so that they stay alive as long as the header is used.
 */
function messageHeader(address: (b: Buffer) => bigint, data: Uint8Array, control: Buffer): { header: Buffer; control: Buffer; keep: Buffer[] } {
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
  return { header, control, keep: [payload, iov] };
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

/** Binds the unix socket calls through koffi. */
export function loadUnixSockets(): UnixSockets {
  const koffi = loadKoffi();
  const lib = koffi.load('libc.so.6');
  const socket = lib.func('int socket(int domain, int type, int protocol)');
  const bind = lib.func('int bind(int fd, const uint8_t *addr, uint32_t len)');
  const listen = lib.func('int listen(int fd, int backlog)');
  const accept4 = lib.func('int accept4(int fd, void *addr, void *len, int flags)');
  const connect = lib.func('int connect(int fd, const uint8_t *addr, uint32_t len)');
  const getsockopt = lib.func('int getsockopt(int fd, int level, int name, uint8_t *value, _Inout_ uint32_t *len)');
  const sendmsg = lib.func('long sendmsg(int fd, const uint8_t *msg, int flags)');
  const recvmsg = lib.func('long recvmsg(int fd, uint8_t *msg, int flags)');
  const close = lib.func('int close(int fd)');
  const check = (operation: string, rc: number | bigint): number => {
    const value = Number(rc);
    if (value < 0) throw new SysError(operation, koffi.errno());
    return value;
  };
  const openSocket = (): number => check('socket(AF_UNIX)', socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  const closing = <T>(fd: number, work: () => T): T => {
    try {
      return work();
    } catch (err) {
      close(fd);
      throw err;
    }
  };
  return {
    listen(path) {
      const fd = openSocket();
      return closing(fd, () => {
        const address = sockaddrUn(path);
        check(`bind ${path}`, bind(fd, address, address.length));
        chmodSync(path, 0o600); // bind made it 0777 less the umask; only its owner may connect
        check(`listen ${path}`, listen(fd, BACKLOG));
        return fd;
      });
    },
    accept(fd) {
      const peer = Number(accept4(fd, null, null, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (peer < 0) {
        const errno = koffi.errno();
        if (errno === EAGAIN || errno === EINTR) return undefined;
        throw new SysError('accept', errno);
      }
      return closing(peer, () => {
        const cred = Buffer.alloc(12); // struct ucred { pid_t pid; uid_t uid; gid_t gid; }
        const len = [cred.length];
        check('getsockopt(SO_PEERCRED)', getsockopt(peer, SOL_SOCKET, SO_PEERCRED, cred, len));
        return { fd: peer, pid: cred.readInt32LE(0), uid: cred.readUInt32LE(4) };
      });
    },
    connect(path) {
      const fd = openSocket();
      return closing(fd, () => {
        const address = sockaddrUn(path);
        check(`connect ${path}`, connect(fd, address, address.length));
        return fd;
      });
    },
    send(fd, message, fds = []) {
      const io = messageHeader(koffi.address, message, controlRights(fds));
      const n = Number(sendmsg(fd, io.header, MSG_NOSIGNAL));
      if (n >= 0) return true;
      const errno = koffi.errno();
      if (errno === EAGAIN) return false;
      throw new SysError('send', errno);
    },
    receive(fd, buf) {
      const io = messageHeader(koffi.address, buf, Buffer.alloc(CONTROL_BYTES));
      const n = Number(recvmsg(fd, io.header, MSG_CMSG_CLOEXEC));
      if (n >= 0) return { length: n, fds: rightsIn(io.control, Number(io.header.readBigUInt64LE(MSGHDR_CONTROLLEN))) };
      const errno = koffi.errno();
      if (errno === EAGAIN || errno === EINTR) return undefined;
      throw new SysError('recv', errno);
    },
    close: (fd) => void check('close', close(fd)),
  };
}
