// The structs passed to the kernel by pointer, built and read with the running
// architecture's layouts (kernel-abi.ts). Pure: bytes in, bytes out. Both
// architectures we build for are little-endian.
import { ABI } from './kernel-abi';

/**
 * A struct sockaddr_ll: `protocol` (an ethertype, network order) on `ifindex`, and to send, the Ethernet `destination`.
 */
export function sockaddrLl(ifindex: number, protocol: number, destination?: Uint8Array): Buffer {
  const ll = ABI.sockaddr_ll;
  const sll = Buffer.alloc(ll.size);
  sll.writeUInt16LE(ABI.AF_PACKET, ll.sll_family);
  sll.writeUInt16BE(protocol, ll.sll_protocol);
  sll.writeInt32LE(ifindex, ll.sll_ifindex);
  if (destination) {
    sll.writeUInt16LE(ABI.ARPHRD_ETHER, ll.sll_hatype);
    sll[ll.sll_halen] = destination.length; // sll_pkttype stays 0 (PACKET_HOST)
    sll.set(destination, ll.sll_addr);
  }
  return sll;
}

/** A struct sockaddr_nl of port id 0 (to send: the kernel; to bind: one the kernel picks), no groups. */
export function sockaddrNl(): Buffer {
  const address = Buffer.alloc(ABI.sockaddr_nl.size);
  address.writeUInt16LE(ABI.AF_NETLINK, ABI.sockaddr_nl.nl_family);
  return address;
}

/** An array of struct pollfd asking `events` of each of `fds`. */
export function pollfds(fds: readonly number[], events: number): Buffer {
  const { size, fd, events: at } = ABI.pollfd;
  const set = Buffer.alloc(size * fds.length);
  fds.forEach((n, i) => {
    set.writeInt32LE(n, size * i + fd);
    set.writeInt16LE(events, size * i + at);
  });
  return set;
}

/** The revents of entry `i` of a pollfd array. */
export function revents(set: Buffer, i: number): number {
  return set.readInt16LE(ABI.pollfd.size * i + ABI.pollfd.revents);
}

/** The pid and uid of a filled struct ucred. */
export function readUcred(cred: Buffer): { pid: number; uid: number } {
  return { pid: cred.readInt32LE(ABI.ucred.pid), uid: cred.readUInt32LE(ABI.ucred.uid) };
}

/** A filled struct timespec (64-bit time_t and long) in milliseconds. */
export function timespecMs(ts: Buffer): number {
  return Number(ts.readBigInt64LE(ABI.timespec.tv_sec)) * 1000 + Number(ts.readBigInt64LE(ABI.timespec.tv_nsec)) / 1e6;
}
