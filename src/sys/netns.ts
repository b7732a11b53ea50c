// The only place that switches network namespaces.
//
// Why it is built this way: setns(2) moves only the calling thread. Our JS runs
// on the main thread, but the runtime's other threads stay in the host netns,
// and any `await` lets other callbacks run while switched. So we switch the main
// thread in, synchronously create every socket we need (netlink and AF_PACKET
// sockets stay bound to the netns they were created in), read the sysctls we
// need, and switch straight back before returning. After that, pod work happens
// through those sockets from the host netns.
//
// A thread the runtime creates while the main thread is in a pod's netns is born
// there, and keeps that netns alive as long as it lives: JavaScriptCore's parallel
// GC markers are such threads, made on demand. The announcer runs without them
// (BUN_JSC_numberOfGCMarkers=1, in the environment of whoever starts it:
// src/sys/detached.ts, deploy/daemonset.yaml), and threadsInOtherNetns tells it
// when a thread was born in a pod's netns all the same.
import { closeSync, fstatSync, openSync, readdirSync, readFileSync, statSync, statfsSync } from 'node:fs';
import { ABI } from './abi/kernel-abi';
import { fileIdOf, sameFile, type FileId } from './file-id';
import type { Libc } from './libc';
import { frameReceiver, packetSocket, type FrameReceiver, type PacketSocket } from './packet-socket';
import { Rtnl, RtnlEvents } from './rtnl';
import { RtnlGroup } from '../wire/rtnetlink';
import { hasErrno, attempt, sysErrorFrom } from './sys-error';

const { CLONE_NEWNET, NSFS_MAGIC, O_NOCTTY, O_NONBLOCK, O_RDONLY } = ABI;
const OWN_NETNS = '/proc/thread-self/ns/net';

/** What a CNI_NETNS path turned out to be. */
export type NetnsCheck =
  | { kind: 'ok'; id: FileId }
  | { kind: 'missing' }
  | { kind: 'not-netns'; reason: string }
  | { kind: 'own' };

/**
 * Checks, without entering it (unless NS_GET_NSTYPE is missing: see notNetnsReason), that `path`
 * is a network namespace (NS_GET_NSTYPE, so that /proc/PID/ns/mnt and its kind are refused) and
 * not the plugin's own. Only an nsfs file is opened (O_NONBLOCK), and it must still be the file
 * first looked at when it is queried.
 */
export function checkNetnsPath(libc: Libc, path: string): NetnsCheck {
  let st;
  try {
    st = statSync(path);
    if (statfsSync(path).type !== NSFS_MAGIC) return { kind: 'not-netns', reason: 'not a namespace file (nsfs)' };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    return { kind: 'not-netns', reason: (err as Error).message };
  }
  let fd;
  try {
    fd = openSync(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  } catch (err) {
    return { kind: 'not-netns', reason: (err as Error).message };
  }
  try {
    if (!sameFile(fstatSync(fd), st)) return { kind: 'not-netns', reason: 'it changed while being checked' };
    const problem = notNetnsReason(libc, fd, path);
    if (problem !== undefined) return { kind: 'not-netns', reason: problem };
  } finally {
    closeSync(fd);
  }
  if (sameFile(statSync(OWN_NETNS), st)) return { kind: 'own' };
  return { kind: 'ok', id: fileIdOf(st) };
}

/**
 * Why the namespace file open at `fd` is not a network namespace, or undefined when it is; by
 * ioctl(NS_GET_NSTYPE). Where that ioctl is unknown (ENOTTY before Linux 4.11, ENOSYS under
 * qemu-user, which does not pass it on) setns(2) tells instead: naming CLONE_NEWNET, it refuses
 * (EINVAL) any other type before entering, and a netns it enters is left at once.
 */
function notNetnsReason(libc: Libc, fd: number, path: string): string | undefined {
  let type;
  try {
    type = libc.nsType(fd);
  } catch (err) {
    if (!hasErrno(err, 'ENOTTY', 'ENOSYS')) return (err as Error).message;
    try {
      inNetns(libc, path, () => undefined, fd); // in and straight back
      return undefined;
    } catch (setnsErr) {
      return hasErrno(setnsErr, 'EINVAL') ? 'it is not a network namespace' : (setnsErr as Error).message;
    }
  }
  return type === CLONE_NEWNET ? undefined : `it is a ${nsTypeName(type)} namespace`;
}

/** Host-side rtnetlink sockets: requests, and notifications (by default of links: bridge ports). */
export interface HostSockets {
  rtnl: Rtnl;
  events: RtnlEvents;
  close(): void;
}

/**
 * Sockets bound to a pod netns: rtnetlink's (its events: link and address notifications inside the pod) and a packet
 * socket. Close them to release the netns.
 */
export interface PodSockets extends HostSockets {
  packet: PacketSocket;
  /** net.ipv6.conf.all.forwarding inside the pod: sets the NA's R flag. */
  ipv6Forwarding: boolean;
}

/**
 * Rtnetlink sockets in the host's netns: the plugin's own, or the one at `path` (the netns of the process that sent
 * the command, where the host side of its pods is); `events` follows `groups` (RtnlGroup values).
 */
export function openHostSockets(libc: Libc, path?: string, groups: readonly number[] = [RtnlGroup.Link]): HostSockets {
  const open = (opened: Opened): HostSockets => {
    const rtnl = opened(new Rtnl(libc, libc.openNetlinkSocket([])));
    const events = opened(new RtnlEvents(libc, libc.openNetlinkSocket(groups)));
    return { rtnl, events, close: () => (rtnl.close(), events.close()) };
  };
  return path === undefined ? closingOnFailure(open) : inNetns(libc, path, open);
}

/**
 * Opens in the netns at `path` an rtnetlink socket, one subscribed to link and address changes, and a packet socket;
 * throws SysError (EINVAL: no netns).
 */
export function openPodSockets(libc: Libc, path: string): PodSockets {
  return inNetns(libc, path, (opened) => {
    const rtnl = opened(new Rtnl(libc, libc.openNetlinkSocket([])));
    const groups = [RtnlGroup.Link, RtnlGroup.Ipv4Ifaddr, RtnlGroup.Ipv6Ifaddr];
    const events = opened(new RtnlEvents(libc, libc.openNetlinkSocket(groups)));
    const packet = opened(packetSocket(libc, libc.openPacketSocket()));
    const ipv6Forwarding = readSysctlFlag('/proc/sys/net/ipv6/conf/all/forwarding');
    return { rtnl, events, packet, ipv6Forwarding, close: () => (rtnl.close(), events.close(), packet.close()) };
  });
}

/**
 * Enters the netns at `path` and opens there one receiver of `ethertype` frames per interface index (see
 * Libc.openReceiver).
 */
export function openReceivers(
  libc: Libc,
  path: string,
  ifindexes: readonly number[],
  ethertype: number,
): FrameReceiver[] {
  return inNetns(libc, path, (opened) =>
    ifindexes.map((index) => opened(frameReceiver(libc, libc.openReceiver(index, ethertype), index))),
  );
}

/** Enters the netns at `path` and opens an rtnetlink socket there (no packet socket: nothing to send). */
export function openPodRtnl(libc: Libc, path: string): Rtnl {
  return inNetns(libc, path, (opened) => opened(new Rtnl(libc, libc.openNetlinkSocket([]))));
}

/**
 * Runs `open` inside the netns at `path` (or, given `fd`, the one open there: `path` names it in messages) and returns
 * to the original netns. `open` must be synchronous (no await while switched) and pass every socket
 * it makes through `opened`, so that all of them are closed if a later one fails.
 */
function inNetns<T>(libc: Libc, path: string, open: (opened: Opened) => T, fd?: number): T {
  const hostFd = openReadOnly(OWN_NETNS);
  try {
    const podFd = fd ?? openReadOnly(path);
    try {
      libc.setns(podFd, CLONE_NEWNET);
    } finally {
      if (fd === undefined) closeSync(podFd);
    }
    try {
      return closingOnFailure(open);
    } finally {
      returnToHost(libc, hostFd, path);
    }
  } finally {
    closeSync(hostFd);
  }
}

/** Passes a socket through, to be closed if a later step fails. */
type Opened = <S extends { close(): void }>(socket: S) => S;

/** Runs `open`; if it throws, every socket it passed through `opened` is closed. */
function closingOnFailure<T>(open: (opened: Opened) => T): T {
  const made: { close(): void }[] = [];
  try {
    return open((socket) => (made.push(socket), socket));
  } catch (err) {
    for (const socket of made) socket.close();
    throw err;
  }
}

function openReadOnly(path: string): number {
  try {
    return openSync(path, 'r');
  } catch (err) {
    throw sysErrorFrom(`open ${path}`, err);
  }
}

function returnToHost(libc: Libc, hostFd: number, path: string): void {
  try {
    libc.setns(hostFd, CLONE_NEWNET);
  } catch (err) {
    // Carrying on inside the pod's netns would make every later host-side
    // operation act on the pod. There is no safe way forward: stop here.
    process.stderr.write(`cni-announcer: cannot return from netns ${path}: ${(err as Error).message}\n`);
    process.abort();
  }
}

/** Whether the sysctl `file` is 1; false when there is no such file (IPv6 disabled in the pod). */
function readSysctlFlag(file: string): boolean {
  return attempt(() => readFileSync(file, 'latin1').trim() === '1') ?? false;
}

/**
 * The threads of this process in another netns than the calling thread's (one born while the main thread was in a
 * pod's netns keeps that netns alive), each as its tid and name; none when /proc cannot tell.
 */
export function threadsInOtherNetns(): { tid: number; comm: string }[] {
  const own = attempt(() => statSync(OWN_NETNS));
  if (own === undefined) return [];
  const found: { tid: number; comm: string }[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      if (sameFile(statSync(`/proc/self/task/${tid}/ns/net`), own)) continue;
      found.push({ tid: Number(tid), comm: readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() });
    } catch {
      // the thread has exited since the listing
    }
  }
  return found;
}

/** Each namespace type: its CLONE_NEW* number and its name in messages. */
const NS_TYPES: readonly { type: number; name: string }[] = [
  { type: ABI.CLONE_NEWTIME, name: 'time' },
  { type: ABI.CLONE_NEWNS, name: 'mount' },
  { type: ABI.CLONE_NEWCGROUP, name: 'cgroup' },
  { type: ABI.CLONE_NEWUTS, name: 'uts' },
  { type: ABI.CLONE_NEWIPC, name: 'ipc' },
  { type: ABI.CLONE_NEWUSER, name: 'user' },
  { type: ABI.CLONE_NEWPID, name: 'pid' },
  { type: ABI.CLONE_NEWNET, name: 'network' },
];

/** The name of namespace type `type` (a CLONE_NEW* number), e.g. `mount`, or its number in hex. */
function nsTypeName(type: number): string {
  return NS_TYPES.find((t) => t.type === type)?.name ?? `0x${type.toString(16)}`;
}
