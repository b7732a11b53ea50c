// Unix SOCK_SEQPACKET sockets through koffi: the background announcer's
// control socket. SEQPACKET keeps message boundaries (one JSON request, one
// reply), and SO_PEERCRED tells who is on the other end. Every fd is
// non-blocking: callers wait with poll(2) (Libc.pollIn) and a deadline.
import { loadKoffi } from './koffi';
import { SysError } from './sys-error';

const AF_UNIX = 1;
const SOCK_SEQPACKET = 5;
const SOCK_NONBLOCK = 0o4000;
const SOCK_CLOEXEC = 0o2000000;
const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
const MSG_NOSIGNAL = 0x4000;
const EAGAIN = 11;
const EINTR = 4;
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
  /** A non-blocking listening socket bound at `path` (which must not exist). */
  listen(path: string): number;
  /** One pending connection with its peer's credentials, or undefined when none is pending. */
  accept(fd: number): Peer | undefined;
  /** A non-blocking socket connected to `path` (ENOENT or ECONNREFUSED when nobody listens). */
  connect(path: string): number;
  /** Sends one message; false when the socket buffer is full (EAGAIN). */
  send(fd: number, message: Uint8Array): boolean;
  /** Receives one message into `buf`: its length, 0 at end of stream, undefined when none is pending. */
  receive(fd: number, buf: Uint8Array): number | undefined;
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
  const send = lib.func('long send(int fd, const uint8_t *buf, size_t len, int flags)');
  const recv = lib.func('long recv(int fd, uint8_t *buf, size_t len, int flags)');
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
    send(fd, message) {
      const n = Number(send(fd, message, message.length, MSG_NOSIGNAL));
      if (n >= 0) return true;
      const errno = koffi.errno();
      if (errno === EAGAIN) return false;
      throw new SysError('send', errno);
    },
    receive(fd, buf) {
      const n = Number(recv(fd, buf, buf.length, 0));
      if (n >= 0) return n;
      const errno = koffi.errno();
      if (errno === EAGAIN || errno === EINTR) return undefined;
      throw new SysError('recv', errno);
    },
    close: (fd) => void check('close', close(fd)),
  };
}
