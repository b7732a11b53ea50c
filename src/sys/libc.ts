// Every libc call of the plugin, bound with koffi: the few calls Node lacks (setns,
// sockets, poll, flock, pidfd_open), each bound on its first call. koffi itself is
// loaded on first use too: loading it dlopen()s its native addon, which VERSION and
// the about text never need. Syscalls live here and in the other files of src/sys only.
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import type Koffi from 'koffi';
import type { LibraryHandle } from 'koffi';
import { formatIPv6 } from '../wire/ip';
import { ABI } from './abi/kernel-abi';
import { pollfds, readUcred, revents, sockaddrLl, sockaddrNl, timespecMs } from './abi/structs';
import { fileIdOf, sameFile } from './file-id';
import { EAGAIN, EINTR, attempt, SysError } from './sys-error';
import { sockaddrIn, sockaddrPort, type TcpSockets } from './tcp-socket';
import { sockaddrUn, type UnixSockets } from './unix-socket';

const { AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_UNIX, CLOCK_BOOTTIME, LOCK_EX, LOCK_NB } = ABI;
const { MSG_DONTWAIT, MSG_NOSIGNAL, NETLINK_ADD_MEMBERSHIP, NETLINK_ROUTE, NS_GET_NSTYPE, POLLIN, POLLOUT } = ABI;
const { SHUT_RD, SO_PEERCRED, SO_REUSEADDR, SOCK_CLOEXEC, SOCK_NONBLOCK, SOCK_RAW, SOCK_STREAM } = ABI;
const { SOL_NETLINK, SOL_SOCKET } = ABI;
const SYS_PIDFD_OPEN = 434;
/** The announcer socket's backlog. */
const BACKLOG = 128;
/** The announcer's sockets: non-blocking streams. */
const STREAM = SOCK_STREAM | SOCK_NONBLOCK;
/** An int option's value 1 (setsockopt). */
const ONE = Buffer.from(Int32Array.of(1).buffer);

/**
 * koffi's API; the first call loads it (require caches it). Modules take koffi from here, never with a top-level
 * import, which would load it at start-up. koffi's entry exports its addon as `default`; in the compiled binary, the
 * build points this require at src/native/embedded-koffi.ts, which puts the addon itself there.
 */
export function loadKoffi(): typeof Koffi {
  return (require('koffi') as { default: typeof Koffi }).default;
}

/** Where loadLibc binds functions: koffi's handle on libc.so.6 (tests pass one that lacks some). */
export type LibcLibrary = Pick<LibraryHandle, 'func'>;
/** A bound libc function. */
type LibcFunction = (...args: unknown[]) => ReturnType<ReturnType<LibcLibrary['func']>>;

/**
 * libc's functions as bound from `lib` (`fn`, and `close`, bound at once: closeInBackground uses close.async), koffi's
 * `errno` of the last call, and the checks every call goes through: `check` returns the return value, and throws
 * SysError(operation, errno) when it is negative; `unlessPending` is check, but undefined when nothing is pending
 * (EAGAIN, EINTR); `closing` returns the fd `work` was given, and closes it when `work` throws. With them, the two
 * steps of every socket: socket(2) and its set-up, and bind(2).
 */
function libcCalls(lib: LibcLibrary) {
  const fn = libcFunctions(lib);
  const close = lib.func('int close(int fd)');
  const koffi = loadKoffi();
  const errno = (): number => koffi.errno();
  const check = (operation: string, rc: number | bigint): number => {
    const value = Number(rc);
    if (value < 0) throw new SysError(operation, errno());
    return value;
  };
  const closing = (fd: number, work: (fd: number) => void): number => {
    try {
      work(fd);
      return fd;
    } catch (err) {
      close(fd);
      throw err;
    }
  };
  const unlessPending = (operation: string, rc: number | bigint): number | undefined => {
    if (Number(rc) >= 0) return Number(rc);
    const e = errno();
    if (e === EAGAIN || e === EINTR) return undefined;
    throw new SysError(operation, e);
  };
  /** socket(2), close-on-exec, of `family` (its name in errors), set up by `setUp` (and closed if that throws). */
  const socket = (family: string, domain: number, type: number, protocol: number, setUp: (fd: number) => void) =>
    closing(check(`socket(${family})`, fn.socket(domain, type | SOCK_CLOEXEC, protocol)), setUp);
  const bind = (operation: string, fd: number, address: Buffer) =>
    check(operation, fn.bind(fd, address, address.length));
  return { fn, close, errno, check, closing, unlessPending, socket, bind };
}

/** The calls of {@link libcCalls}. */
type LibcCalls = ReturnType<typeof libcCalls>;

/** The fds poll(2) found ready to read from and to write to. */
type ReadyFds = { readable: Set<number>; writable: Set<number> };

/** The libc functions the plugin needs; each throws SysError on failure. */
export interface Libc {
  /** setns(2): moves the calling thread into the namespace behind `fd`. */
  setns(fd: number, nstype: number): void;
  /** socket(AF_PACKET, SOCK_RAW|SOCK_CLOEXEC, 0): a send-only packet socket in the current netns. */
  openPacketSocket(): number;
  /**
   * A non-blocking packet socket bound to `ethertype` (ETH_P_ARP, ETH_P_IPV6) on `ifindex`: those frames of that
   * interface, in and out, from the bind on.
   */
  openReceiver(ifindex: number, ethertype: number): number;
  /** sendto(2) with a raw sockaddr; returns the bytes sent. */
  sendto(fd: number, frame: Uint8Array, address: Uint8Array): number;
  /** close(2). */
  close(fd: number): void;
  /**
   * close(2) on a worker thread: for a packet socket, whose close waits for an RCU grace period.
   * `done` hears the outcome on this thread. koffi queues at most 256 such calls and throws beyond.
   */
  closeInBackground(fd: number, done: (error?: unknown) => void): void;
  /**
   * ioctl(fd, NS_GET_NSTYPE): the CLONE_NEW* type of the namespace file behind `fd` (only ever call it on an nsfs
   * file).
   */
  nsType(fd: number): number;
  /**
   * socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_ROUTE), bound, and joined to multicast `groups` (RTNLGRP_*
   * numbers, by NETLINK_ADD_MEMBERSHIP): an rtnetlink socket in the current netns.
   */
  openNetlinkSocket(groups: readonly number[]): number;
  /** recv(2) without blocking into `buf`: the byte count (0 at a stream's end), or undefined when nothing is queued. */
  recvNow(fd: number, buf: Uint8Array): number | undefined;
  /** poll(2) for input on `fds` for up to `timeoutMs`; which of them are readable (or in error). */
  pollIn(fds: readonly number[], timeoutMs: number): boolean[];
  /**
   * poll(2) for input on `readFds` and room to write on `writeFds`, for up to `timeoutMs`; the fds that are ready (or
   * in error).
   */
  pollInOut(readFds: readonly number[], writeFds: readonly number[], timeoutMs: number): ReadyFds;
  /** clock_gettime(CLOCK_BOOTTIME) in ms: one clock for every process of the node, never stepped. */
  bootTimeMs(): number;
  /**
   * flock(fd, LOCK_EX|LOCK_NB), never blocking: false when another open file holds the lock; it goes with the open file
   * (close releases it).
   */
  tryLock(fd: number): boolean;
  /**
   * pidfd_open(2) (Linux 5.3): an fd that polls readable once process `pid` has exited (close-on-exec). Throws
   * SysError: ENOSYS before 5.3, ESRCH once the process is gone.
   */
  pidfdOpen(pid: number): number;
}

/** Every libc function the plugin calls, each bound on its first call; close(2) is bound at once (see loadLibc). */
function libcFunctions(lib: LibcLibrary) {
  /** `definition`, bound on its first call: a run binds only the calls it makes (each binding parses a prototype). */
  const f = (definition: string): LibcFunction => {
    let fn: ReturnType<LibcLibrary['func']> | undefined;
    return (...args) => (fn ??= lib.func(definition))(...args);
  };
  return {
    setns: f('int setns(int fd, int nstype)'),
    socket: f('int socket(int domain, int type, int protocol)'),
    bind: f('int bind(int fd, const uint8_t *addr, uint32_t addrlen)'),
    listen: f('int listen(int fd, int backlog)'),
    accept4: f('int accept4(int fd, void *addr, void *len, int flags)'),
    connect: f('int connect(int fd, const uint8_t *addr, uint32_t len)'),
    shutdown: f('int shutdown(int fd, int how)'),
    sendto: f('long sendto(int fd, const uint8_t *buf, size_t len, int flags, const uint8_t *addr, uint32_t addrlen)'),
    send: f('long send(int fd, const uint8_t *buf, size_t len, int flags)'),
    recv: f('long recv(int fd, uint8_t *buf, size_t len, int flags)'),
    setsockopt: f('int setsockopt(int fd, int level, int name, const uint8_t *value, uint32_t len)'),
    getsockopt: f('int getsockopt(int fd, int level, int name, uint8_t *value, _Inout_ uint32_t *len)'),
    getsockname: f('int getsockname(int fd, uint8_t *addr, _Inout_ uint32_t *len)'),
    ioctl: f('int ioctl(int fd, unsigned long request, ...)'),
    poll: f('int poll(uint8_t *fds, unsigned long nfds, int timeout)'),
    clockGettime: f('int clock_gettime(int clock, uint8_t *ts)'),
    flock: f('int flock(int fd, int operation)'),
    syscall: f('long syscall(long number, ...)'),
  };
}

/** Loads libc through koffi and binds the calls of {@link Libc}, {@link UnixSockets} and {@link TcpSockets}. */
export function loadLibc(lib: LibcLibrary = loadKoffi().load('libc.so.6')): Libc & UnixSockets & TcpSockets {
  const calls = libcCalls(lib);
  const { fn, close, check, unlessPending, socket, bind } = calls;
  return {
    setns: (fd, nstype) => void check('setns', fn.setns(fd, nstype)),
    openPacketSocket: () => check('socket(AF_PACKET)', fn.socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0)),
    openReceiver(ifindex, ethertype) {
      // Protocol 0 at socket(): the socket receives nothing until bind names the protocol and the
      // interface, so no frame of another interface is ever queued on it.
      const what = `bind(AF_PACKET, 0x${ethertype.toString(16)}, ifindex ${ifindex})`;
      const address = sockaddrLl(ifindex, ethertype);
      return socket('AF_PACKET', AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, 0, (fd) => bind(what, fd, address));
    },
    sendto: (fd, frame, address) => check('sendto', fn.sendto(fd, frame, frame.length, 0, address, address.length)),
    close: (fd) => void check('close', close(fd)),
    closeInBackground: (fd, done) =>
      close.async(fd, (err: unknown, rc: number) =>
        done(err ? err : rc < 0 ? new Error(`close(${fd}) on a worker thread failed`) : undefined),
      ),
    nsType: (fd) => check('ioctl(NS_GET_NSTYPE)', fn.ioctl(fd, NS_GET_NSTYPE)),
    // Bound to port id 0: the kernel picks one.
    openNetlinkSocket: (groups) =>
      socket('AF_NETLINK', AF_NETLINK, SOCK_RAW, NETLINK_ROUTE, (fd) => {
        bind('bind(AF_NETLINK)', fd, sockaddrNl());
        for (const group of groups) {
          const value = Buffer.from(Uint32Array.of(group).buffer);
          check(`join netlink group ${group}`, fn.setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, value, 4));
        }
      }),
    recvNow: (fd, buf) => unlessPending('recv', fn.recv(fd, buf, buf.length, MSG_DONTWAIT)),
    ...bindWaitsAndLocks(calls),
    ...bindStreamSockets(calls),
  };
}

/** The calls that wait or tell the time. */
type WaitsAndLocks = 'tryLock' | 'bootTimeMs' | 'pollIn' | 'pollInOut' | 'pidfdOpen';

/** poll(2), flock(2), pidfd_open(2) and CLOCK_BOOTTIME: the calls that wait or tell the time. */
function bindWaitsAndLocks({ fn, check, errno }: LibcCalls): Pick<Libc, WaitsAndLocks> {
  /** poll(2) for input on `readFds` and room to write on `writeFds`: whether each (in that order) is ready. */
  const poll = (readFds: readonly number[], writeFds: readonly number[], timeoutMs: number): boolean[] => {
    const set = Buffer.concat([pollfds(readFds, POLLIN), pollfds(writeFds, POLLOUT)]);
    const count = readFds.length + writeFds.length;
    const n = fn.poll(set, count, Math.max(0, Math.ceil(timeoutMs)));
    if (n < 0 && errno() !== EINTR) throw new SysError('poll', errno());
    return Array.from({ length: count }, (_, i) => n > 0 && revents(set, i) !== 0);
  };
  return {
    tryLock(fd) {
      for (;;) {
        if (fn.flock(fd, LOCK_EX | LOCK_NB) === 0) return true;
        const e = errno();
        if (e === EAGAIN) return false; // EWOULDBLOCK
        if (e !== EINTR) throw new SysError('flock', e);
      }
    },
    // 434 on every architecture (the syscall table is unified from 5.1 on).
    pidfdOpen: (pid) => check('pidfd_open', Number(fn.syscall(SYS_PIDFD_OPEN, 'int', pid, 'uint', 0))),
    bootTimeMs() {
      const ts = Buffer.alloc(ABI.timespec.size);
      check('clock_gettime(CLOCK_BOOTTIME)', fn.clockGettime(CLOCK_BOOTTIME, ts));
      return timespecMs(ts);
    },
    pollIn: (fds, timeoutMs) => poll(fds, [], timeoutMs),
    pollInOut(readFds, writeFds, timeoutMs) {
      const ready = poll(readFds, writeFds, timeoutMs);
      const readable = new Set(readFds.filter((_, i) => ready[i]));
      return { readable, writable: new Set(writeFds.filter((_, i) => ready[readFds.length + i])) };
    },
  };
}

/** The announcer's stream sockets, non-blocking: its unix socket, and its HTTP endpoint's TCP socket. */
function bindStreamSockets(calls: LibcCalls): Omit<UnixSockets, 'recvNow' | 'close'> & TcpSockets {
  const { fn, check, closing, unlessPending, socket, bind } = calls;
  const accept = (fd: number) => unlessPending('accept', fn.accept4(fd, null, null, SOCK_NONBLOCK | SOCK_CLOEXEC));
  return {
    listen: (path) =>
      socket('AF_UNIX', AF_UNIX, STREAM, 0, (fd) => {
        bind(`bind ${path}`, fd, sockaddrUn(path));
        chmodSync(path, 0o600); // bind made it 0777 less the umask; only its owner may connect
        check(`listen ${path}`, fn.listen(fd, BACKLOG));
      }),
    accept(fd) {
      const peer = accept(fd);
      if (peer === undefined) return undefined;
      const cred = Buffer.alloc(ABI.ucred.size);
      closing(peer, () =>
        check('getsockopt(SO_PEERCRED)', fn.getsockopt(peer, SOL_SOCKET, SO_PEERCRED, cred, [cred.length])),
      );
      return { fd: peer, ...readUcred(cred) };
    },
    connect: (path) =>
      socket('AF_UNIX', AF_UNIX, STREAM, 0, (fd) => {
        const address = sockaddrUn(path);
        check(`connect ${path}`, fn.connect(fd, address, address.length));
      }),
    send: (fd, bytes) => unlessPending('send', fn.send(fd, bytes, bytes.length, MSG_NOSIGNAL | MSG_DONTWAIT)) ?? 0,
    shutdownListener: (fd) => void check('shutdown(SHUT_RD)', fn.shutdown(fd, SHUT_RD)),
    socketFile: (path) => fileIdOf(lstatSync(path)),
    removeSocketFile: (path, file) => {
      const st = attempt(() => lstatSync(path), 'ENOENT');
      if (st === undefined || !sameFile(st, file)) return false;
      unlinkSync(path);
      return true;
    },
    listenTcp(address, backlog) {
      const host = address.family === 6 ? `[${formatIPv6(address.bytes)}]` : [...address.bytes].join('.');
      const where = `${host}:${address.port}`;
      const bound = Buffer.alloc(ABI.sockaddr_in6.size);
      const fd = socket('AF_INET', address.family === 6 ? AF_INET6 : AF_INET, STREAM, 0, (fd) => {
        check('setsockopt(SO_REUSEADDR)', fn.setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, ONE, ONE.length));
        bind(`bind ${where}`, fd, sockaddrIn(address));
        check(`listen ${where}`, fn.listen(fd, backlog));
        check('getsockname', fn.getsockname(fd, bound, [bound.length]));
      });
      return { fd, port: sockaddrPort(bound) };
    },
    acceptTcp: accept,
  };
}
