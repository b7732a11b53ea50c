// Every number and struct layout the code hands the kernel (or reads back from
// it), one table per architecture: open flags, socket options, ioctls, the
// structs passed by pointer. Most Linux values are the same on x86-64 and
// arm64, but not all (open flags, for one), so none is typed in a module of its
// own. test/unit/sys/kernel-abi.test.ts checks each table against that
// architecture's C headers. Protocol numbers (ethertypes, rtnetlink types and
// attributes) are the same everywhere and stay in src/wire.
import { ARM64 } from './arm64';
import { X64 } from './x64';

/** The integer constants, by their C names. */
export interface KernelConstants {
  O_RDONLY: number;
  O_WRONLY: number;
  O_RDWR: number;
  O_CREAT: number;
  O_EXCL: number;
  O_NOCTTY: number;
  O_APPEND: number;
  O_NONBLOCK: number;
  O_DIRECTORY: number;
  O_NOFOLLOW: number;
  O_CLOEXEC: number;
  O_PATH: number;
  /** __O_TMPFILE | O_DIRECTORY. */
  O_TMPFILE: number;
  AF_UNIX: number;
  AF_INET: number;
  AF_INET6: number;
  AF_NETLINK: number;
  AF_PACKET: number;
  SOCK_RAW: number;
  SOCK_STREAM: number;
  SOCK_NONBLOCK: number;
  SOCK_CLOEXEC: number;
  SOL_SOCKET: number;
  SO_PEERCRED: number;
  SO_REUSEADDR: number;
  SOL_NETLINK: number;
  NETLINK_ROUTE: number;
  NETLINK_ADD_MEMBERSHIP: number;
  MSG_DONTWAIT: number;
  MSG_NOSIGNAL: number;
  SHUT_RD: number;
  ARPHRD_ETHER: number;
  POLLIN: number;
  POLLOUT: number;
  CLOCK_BOOTTIME: number;
  LOCK_EX: number;
  LOCK_NB: number;
  /** _IO(0xb7, 0x3), Linux 4.11+. */
  NS_GET_NSTYPE: number;
  /** statfs(2) f_type of a namespace file. */
  NSFS_MAGIC: number;
  CLONE_NEWNET: number;
  CLONE_NEWNS: number;
  CLONE_NEWCGROUP: number;
  CLONE_NEWUTS: number;
  CLONE_NEWIPC: number;
  CLONE_NEWUSER: number;
  CLONE_NEWPID: number;
  CLONE_NEWTIME: number;
}

/** A struct's layout: `size` (sizeof), `align` (_Alignof) where the code needs it, and each field's offset. */
type Layout<Field extends string> = { size: number } & Record<Field, number>;

/** The structs passed by pointer, by their C names (`struct` left out); glibc's layouts. */
export interface KernelStructs {
  sockaddr_ll: Layout<
    'sll_family' | 'sll_protocol' | 'sll_ifindex' | 'sll_hatype' | 'sll_pkttype' | 'sll_halen' | 'sll_addr'
  >;
  sockaddr_nl: Layout<'nl_family' | 'nl_pid' | 'nl_groups'>;
  sockaddr_un: Layout<'sun_family' | 'sun_path'>;
  sockaddr_in: Layout<'sin_family' | 'sin_port' | 'sin_addr'>;
  sockaddr_in6: Layout<'sin6_family' | 'sin6_port' | 'sin6_flowinfo' | 'sin6_addr' | 'sin6_scope_id'>;
  ucred: Layout<'pid' | 'uid' | 'gid'>;
  pollfd: Layout<'fd' | 'events' | 'revents'>;
  timespec: Layout<'tv_sec' | 'tv_nsec'>;
}

/** One architecture's table. */
export type KernelAbi = KernelConstants & KernelStructs;

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
