// Every number and struct layout the code hands the kernel (or reads back from
// it), one table per architecture: open flags, socket options, ioctls, the
// structs passed by pointer (each struct as its size and its fields' offsets,
// by their C names, `struct` left out; glibc's layouts). Most Linux values are
// the same on x86-64 and arm64, but not all (open flags, for one), so none is
// typed in a module of its own. test/unit/sys/kernel-abi.test.ts checks each
// table against that architecture's C headers. Protocol numbers (ethertypes,
// rtnetlink types and attributes) are the same everywhere and stay in src/wire.

/** x86-64 Linux with glibc, as its C headers give it. */
const X64 = {
  O_RDONLY: 0,
  O_WRONLY: 0o1,
  O_RDWR: 0o2,
  O_CREAT: 0o100,
  O_EXCL: 0o200,
  O_NOCTTY: 0o400,
  O_APPEND: 0o2000,
  O_NONBLOCK: 0o4000,
  O_DIRECTORY: 0o200000,
  O_NOFOLLOW: 0o400000,
  O_CLOEXEC: 0o2000000,
  O_PATH: 0o10000000,
  /** __O_TMPFILE | O_DIRECTORY. */
  O_TMPFILE: 0o20200000,
  AF_UNIX: 1,
  AF_INET: 2,
  AF_INET6: 10,
  AF_NETLINK: 16,
  AF_PACKET: 17,
  SOCK_RAW: 3,
  SOCK_STREAM: 1,
  SOCK_NONBLOCK: 0o4000,
  SOCK_CLOEXEC: 0o2000000,
  SOL_SOCKET: 1,
  SO_PEERCRED: 17,
  SO_REUSEADDR: 2,
  SOL_NETLINK: 270,
  NETLINK_ROUTE: 0,
  NETLINK_ADD_MEMBERSHIP: 1,
  MSG_DONTWAIT: 0x40,
  MSG_NOSIGNAL: 0x4000,
  SHUT_RD: 0,
  ARPHRD_ETHER: 1,
  POLLIN: 0x1,
  POLLOUT: 0x4,
  CLOCK_BOOTTIME: 7,
  LOCK_EX: 2,
  LOCK_NB: 4,
  /** _IO(0xb7, 0x3), Linux 4.11+. */
  NS_GET_NSTYPE: 0xb703,
  /** statfs(2) f_type of a namespace file. */
  NSFS_MAGIC: 0x6e736673,
  CLONE_NEWNET: 0x40000000,
  CLONE_NEWNS: 0x00020000,
  CLONE_NEWCGROUP: 0x02000000,
  CLONE_NEWUTS: 0x04000000,
  CLONE_NEWIPC: 0x08000000,
  CLONE_NEWUSER: 0x10000000,
  CLONE_NEWPID: 0x20000000,
  CLONE_NEWTIME: 0x00000080,
  sockaddr_ll: {
    size: 20,
    sll_family: 0,
    sll_protocol: 2,
    sll_ifindex: 4,
    sll_hatype: 8,
    sll_pkttype: 10,
    sll_halen: 11,
    sll_addr: 12,
  },
  sockaddr_nl: { size: 12, nl_family: 0, nl_pid: 4, nl_groups: 8 },
  sockaddr_un: { size: 110, sun_family: 0, sun_path: 2 },
  sockaddr_in: { size: 16, sin_family: 0, sin_port: 2, sin_addr: 4 },
  sockaddr_in6: { size: 28, sin6_family: 0, sin6_port: 2, sin6_flowinfo: 4, sin6_addr: 8, sin6_scope_id: 24 },
  ucred: { size: 12, pid: 0, uid: 4, gid: 8 },
  pollfd: { size: 8, fd: 0, events: 4, revents: 6 },
  timespec: { size: 16, tv_sec: 0, tv_nsec: 8 },
};

/** One architecture's table: the same names on every architecture, x86-64's shown above. */
export type KernelAbi = typeof X64;

/**
 * arm64 (aarch64) Linux with glibc: x86-64's numbers and layouts but for O_DIRECTORY and O_NOFOLLOW, and so O_TMPFILE
 * (x86-64 kept i386's values; arm64 has the generic ones).
 */
const ARM64: KernelAbi = { ...X64, O_DIRECTORY: 0o40000, O_NOFOLLOW: 0o100000, O_TMPFILE: 0o20040000 };

/** The architectures the binary is built for (process.arch names). */
const TABLES: Readonly<Record<string, KernelAbi>> = { x64: X64, arm64: ARM64 };

/** The table of `arch` (a process.arch name); throws for an architecture without one. */
export function kernelAbi(arch: string): KernelAbi {
  const table = Object.hasOwn(TABLES, arch) ? TABLES[arch] : undefined;
  if (!table) throw new Error(`no kernel ABI table for ${arch} (only ${Object.keys(TABLES).join(', ')})`);
  return table;
}

/** The running architecture's table. */
export const ABI: KernelAbi = kernelAbi(process.arch);
