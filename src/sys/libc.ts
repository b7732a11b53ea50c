// The few libc calls Node lacks, bound with koffi. Syscalls live here and in
// the other files of src/sys only.
import { ABI } from './abi/kernel-abi';
import { pollfds, revents, sockaddrLl, sockaddrNl, timespec, timespecMs } from './abi/structs';
import { loadKoffi } from './koffi';
import { lazyFunc, type LibcLibrary } from './lazy-binding';
import { EAGAIN, EINTR, SysError } from './sys-error';
import { callChecks, type CallChecks } from './libc-calls';
import { bindTcpSockets } from './libc-tcp';
import { bindUnixSockets } from './libc-unix';
import type { TcpSockets } from './tcp-socket';
import type { UnixSockets } from './unix-socket';

const { AF_NETLINK, AF_PACKET, CLOCK_BOOTTIME, LOCK_EX, LOCK_NB, MSG_DONTWAIT } = ABI;
const { NETLINK_ADD_MEMBERSHIP, NETLINK_ROUTE, NS_GET_NSTYPE, POLLIN, POLLOUT } = ABI;
const { SOCK_CLOEXEC, SOCK_NONBLOCK, SOCK_RAW, SOL_NETLINK } = ABI;
const SYS_PIDFD_OPEN = 434;

export type { LibcLibrary } from './lazy-binding';

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
  closeInBackground(fd: number, done?: (error?: unknown) => void): void;
  /**
   * ioctl(fd, NS_GET_NSTYPE): the CLONE_NEW* type of the namespace file behind `fd` (only ever call it on an nsfs
   * file).
   */
  nsType(fd: number): number;
  /** socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_ROUTE), bound: an rtnetlink socket in the current netns. */
  openNetlinkSocket(): number;
  /** setsockopt(NETLINK_ADD_MEMBERSHIP): joins multicast `group` (an RTNLGRP_* number). */
  joinGroup(fd: number, group: number): void;
  /** recv(2) without blocking into `buf`; the byte count, or undefined when nothing is queued. */
  recvNow(fd: number, buf: Uint8Array): number | undefined;
  /** poll(2) for input on `fds` for up to `timeoutMs`; which of them are readable (or in error). */
  pollIn(fds: readonly number[], timeoutMs: number): boolean[];
  /**
   * poll(2) for input on `readFds` and room to write on `writeFds`, for up to `timeoutMs`; the fds that are ready (or
   * in error).
   */
  pollInOut(
    readFds: readonly number[],
    writeFds: readonly number[],
    timeoutMs: number,
  ): { readable: Set<number>; writable: Set<number> };
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

/** Libc.tryLock, as lock takers get it injected (tests may fake it). */
export type TryLock = Libc['tryLock'];

/** Loads libc through koffi and binds the calls of {@link Libc}, {@link UnixSockets} and {@link TcpSockets}. */
export function loadLibc(lib: LibcLibrary = loadKoffi().load('libc.so.6')): Libc & UnixSockets & TcpSockets {
  const koffi = loadKoffi();
  const setns = lazyFunc(lib, 'int setns(int fd, int nstype)');
  const socket = lazyFunc(lib, 'int socket(int domain, int type, int protocol)');
  const sendto = lazyFunc(
    lib,
    'long sendto(int fd, const uint8_t *buf, size_t len, int flags, const uint8_t *addr, uint32_t addrlen)',
  );
  const close = lib.func('int close(int fd)'); // eager: closeInBackground uses close.async
  const ioctl = lazyFunc(lib, 'int ioctl(int fd, unsigned long request, ...)');
  const bind = lazyFunc(lib, 'int bind(int fd, const uint8_t *addr, uint32_t addrlen)');
  const setsockopt = lazyFunc(lib, 'int setsockopt(int fd, int level, int name, const uint8_t *value, uint32_t len)');
  const recv = lazyFunc(lib, 'long recv(int fd, uint8_t *buf, size_t len, int flags)');
  const { check, unlessPending, closing } = callChecks(() => koffi.errno(), close);
  const core: Libc = {
    setns: (fd, nstype) => void check('setns', setns(fd, nstype)),
    openPacketSocket: () => check('socket(AF_PACKET)', socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0)),
    openReceiver(ifindex, ethertype) {
      // Protocol 0 at socket(): the socket receives nothing until bind names the protocol and the
      // interface, so no frame of another interface is ever queued on it.
      return closing(
        check('socket(AF_PACKET)', socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)),
        (fd) => {
          const address = sockaddrLl(ifindex, ethertype);
          const what = `bind(AF_PACKET, 0x${ethertype.toString(16)}, ifindex ${ifindex})`;
          check(what, bind(fd, address, address.length));
        },
      );
    },
    sendto: (fd, frame, address) => check('sendto', sendto(fd, frame, frame.length, 0, address, address.length)),
    close: (fd) => void check('close', close(fd)),
    closeInBackground: (fd, done) =>
      close.async(fd, (err: unknown, rc: number) =>
        done?.(err ? err : rc < 0 ? new Error(`close(${fd}) on a worker thread failed`) : undefined),
      ),
    nsType: (fd) => check('ioctl(NS_GET_NSTYPE)', ioctl(fd, NS_GET_NSTYPE)),
    openNetlinkSocket: () =>
      closing(check('socket(AF_NETLINK)', socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)), (fd) => {
        const address = sockaddrNl(); // port id 0: the kernel picks one
        check('bind(AF_NETLINK)', bind(fd, address, address.length));
      }),
    joinGroup(fd, group) {
      const value = Buffer.alloc(4);
      value.writeUInt32LE(group, 0);
      check(`join netlink group ${group}`, setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, value, 4));
    },
    recvNow: (fd, buf) => unlessPending('recv', recv(fd, buf, buf.length, MSG_DONTWAIT)),
    ...bindWaitsAndLocks(lib, check, () => koffi.errno()),
  };
  const checks = { check, unlessPending, closing };
  return { ...core, ...bindUnixSockets(lib, checks, core.close), ...bindTcpSockets(lib, checks) };
}

/** poll(2), flock(2), pidfd_open(2) and CLOCK_BOOTTIME: the calls that wait or tell the time. */
function bindWaitsAndLocks(
  lib: LibcLibrary,
  check: CallChecks['check'],
  errno: () => number,
): Pick<Libc, 'tryLock' | 'bootTimeMs' | 'pollIn' | 'pollInOut' | 'pidfdOpen'> {
  const syscall = lazyFunc(lib, 'long syscall(long number, ...)');
  const poll = lazyFunc(lib, 'int poll(uint8_t *fds, unsigned long nfds, int timeout)');
  const clockGettime = lazyFunc(lib, 'int clock_gettime(int clock, uint8_t *ts)');
  const flock = lazyFunc(lib, 'int flock(int fd, int operation)');
  const pollSet = (set: Buffer, count: number, timeoutMs: number): number => {
    const n = poll(set, count, Math.max(0, Math.ceil(timeoutMs)));
    if (n < 0 && errno() !== EINTR) throw new SysError('poll', errno());
    return n;
  };
  return {
    tryLock(fd) {
      for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) === 0) return true;
        const e = errno();
        if (e === EAGAIN) return false; // EWOULDBLOCK
        if (e !== EINTR) throw new SysError('flock', e);
      }
    },
    // 434 on every architecture (the syscall table is unified from 5.1 on).
    pidfdOpen: (pid) => check('pidfd_open', Number(syscall(SYS_PIDFD_OPEN, 'int', pid, 'uint', 0))),
    bootTimeMs() {
      const ts = timespec();
      check('clock_gettime(CLOCK_BOOTTIME)', clockGettime(CLOCK_BOOTTIME, ts));
      return timespecMs(ts);
    },
    pollIn(fds, timeoutMs) {
      const set = pollfds(fds, POLLIN);
      const n = pollSet(set, fds.length, timeoutMs);
      return fds.map((_, i) => n > 0 && revents(set, i) !== 0);
    },
    pollInOut(readFds, writeFds, timeoutMs) {
      const fds = [...readFds, ...writeFds];
      const set = Buffer.concat([pollfds(readFds, POLLIN), pollfds(writeFds, POLLOUT)]);
      const n = pollSet(set, fds.length, timeoutMs);
      const ready = (from: number, count: number): Set<number> =>
        new Set(fds.slice(from, from + count).filter((_, i) => n > 0 && revents(set, from + i) !== 0));
      return { readable: ready(0, readFds.length), writable: ready(readFds.length, writeFds.length) };
    },
  };
}
