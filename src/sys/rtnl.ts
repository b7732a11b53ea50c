// rtnetlink over netlink sockets bound through koffi: typed requests (Rtnl), and
// change notifications read without waiting (RtnlEvents). A socket belongs to the
// netns it was opened in (see netns.ts); this file never switches. Requests block,
// bounded by a deadline: the kernel answers at once, so a request holds up the
// announcer's loop at most that long (REQUEST_TIMEOUT_MS when a reply is lost).
import {
  addressDumpPayload,
  bridgePortDumpPayload,
  fdbGetPayload,
  getLinkPayload,
  neighDumpPayload,
  neighGetPayload,
  parseAddress,
  parseLink,
  parseNeigh,
  parseRoute,
  routeDumpPayload,
  RTM_GETADDR,
  RTM_GETLINK,
  RTM_GETNEIGH,
  RTM_GETROUTE,
  RTM_SETLINK,
  setMacPayload,
  type AddressInfo,
  type LinkInfo,
  type NeighEntry,
  type RouteEntry,
} from '../wire/rtnetlink';
import {
  decodeMessages,
  encodeMessage,
  errorOf,
  NLM_F_ACK,
  NLM_F_DUMP,
  NLM_F_REQUEST,
  NLMSG_DONE,
  NLMSG_ERROR,
  type NetlinkMessage,
} from '../wire/netlink';
import { sockaddrNl } from './abi/structs';
import type { Libc } from './libc';
import { ETIMEDOUT, hasErrno, SysError } from './sys-error';

/** Every request gives up after this long (a lost reply must not hang ADD). */
const REQUEST_TIMEOUT_MS = 5000;
const NLM_F_MULTI = 0x2;
/** Large enough for one datagram of a dump or of notifications (the kernel fills at most 32 KiB per recv). */
const RECEIVE_BYTES = 64 * 1024;
/** The kernel's netlink address: port id 0. */
const KERNEL = sockaddrNl();

function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** A reply's parser: its object, or undefined for a reply it makes nothing of (too short, another kind). */
type Parse<T> = (reply: Buffer) => T | undefined;

/** rtnetlink queries and changes over one socket. */
export class Rtnl {
  private seq = 1;
  private readonly buffer = Buffer.alloc(RECEIVE_BYTES);

  constructor(
    private readonly libc: Libc,
    private readonly fd: number,
  ) {}

  /** The link called `name`, or undefined. */
  linkByName(name: string): LinkInfo | undefined {
    return this.getOne(`RTM_GETLINK ${name}`, RTM_GETLINK, getLinkPayload({ name }), parseLink, 'ENODEV');
  }

  /** The link with ifindex `index`, or undefined. */
  linkByIndex(index: number): LinkInfo | undefined {
    return this.getOne(`RTM_GETLINK ifindex ${index}`, RTM_GETLINK, getLinkPayload({ index }), parseLink, 'ENODEV');
  }

  /** Every link of the socket's netns (one dump, without statistics). */
  links(): LinkInfo[] {
    return this.dump('RTM_GETLINK dump', RTM_GETLINK, getLinkPayload({ index: 0 }), parseLink);
  }

  /** The bridge port state of `index` (PortState), or undefined if it is no bridge port. */
  bridgePortState(index: number): number | undefined {
    // The kernel answers AF_BRIDGE link requests only as a dump.
    const ports = this.dump('RTM_GETLINK AF_BRIDGE dump', RTM_GETLINK, bridgePortDumpPayload(), parseLink);
    return ports.find((port) => port.index === index)?.portState;
  }

  /** The IPv4 and IPv6 addresses of link `index`. */
  addresses(index: number): AddressInfo[] {
    const all = this.dump('RTM_GETADDR dump', RTM_GETADDR, addressDumpPayload(), parseAddress);
    return all.filter((address) => address.index === index);
  }

  /** Every neighbour entry of `family`: AF_BRIDGE for the bridges' FDB entries, AF_INET or AF_INET6 (one dump). */
  neighbours(family: number): NeighEntry[] {
    return this.dump(`RTM_GETNEIGH dump family ${family}`, RTM_GETNEIGH, neighDumpPayload(family), parseNeigh);
  }

  /**
   * The FDB entry of `mac` on bridge `bridgeIndex`, VLAN 0, or undefined (one get, which needs Linux 5.0: EOPNOTSUPP
   * before).
   */
  fdbEntry(bridgeIndex: number, mac: Uint8Array): NeighEntry | undefined {
    const operation = `RTM_GETNEIGH fdb of bridge ifindex ${bridgeIndex}`;
    return this.getOne(operation, RTM_GETNEIGH, fdbGetPayload(bridgeIndex, mac), parseNeigh, 'ENOENT');
  }

  /** The neighbour entry of `dst` on link `index`, or undefined (one get, which needs Linux 5.0: EOPNOTSUPP before). */
  neighbour(family: number, index: number, dst: Uint8Array): NeighEntry | undefined {
    const operation = `RTM_GETNEIGH family ${family} on ifindex ${index}`;
    return this.getOne(operation, RTM_GETNEIGH, neighGetPayload(family, index, dst), parseNeigh, 'ENOENT');
  }

  /** Every unicast route of `family` (AF_INET or AF_INET6), all tables (one dump). */
  routes(family: number): RouteEntry[] {
    return this.dump(`RTM_GETROUTE dump family ${family}`, RTM_GETROUTE, routeDumpPayload(family), parseRoute);
  }

  /** Sets the MAC address of link `index`. */
  setMac(index: number, mac: Uint8Array): void {
    this.request(`set MAC of ifindex ${index}`, RTM_SETLINK, NLM_F_ACK, setMacPayload(index, mac));
  }

  /** Closes the socket. */
  close(): void {
    this.libc.close(this.fd);
  }

  /** The objects of a dump the kernel answers, each parsed (those `parse` makes nothing of left out). */
  private dump<T>(operation: string, type: number, payload: Buffer, parse: Parse<T>): T[] {
    return this.request(operation, type, NLM_F_DUMP, payload).flatMap((reply) => parse(reply) ?? []);
  }

  /** One object the kernel answers a get with, parsed; undefined when it says `absent` (the errno of "no such"). */
  private getOne<T>(operation: string, type: number, payload: Buffer, parse: Parse<T>, absent: string): T | undefined {
    try {
      const [reply] = this.request(operation, type, 0, payload);
      return reply ? parse(reply) : undefined;
    } catch (err) {
      if (hasErrno(err, absent)) return undefined;
      throw err;
    }
  }

  /**
   * The payloads of one request's replies (a message, a dump up to NLMSG_DONE, or an ACK); replies to earlier requests
   * (one that timed out) are skipped by sequence number.
   */
  private request(operation: string, type: number, flags: number, payload: Buffer): Buffer[] {
    const seq = this.seq++;
    this.libc.sendto(this.fd, encodeMessage(type, NLM_F_REQUEST | flags, seq, payload), KERNEL);
    const deadline = monotonicMs() + REQUEST_TIMEOUT_MS;
    const replies: Buffer[] = [];
    for (;;) {
      const n = this.libc.recvNow(this.fd, this.buffer);
      if (n === undefined) {
        const left = deadline - monotonicMs();
        if (left <= 0) throw new SysError(operation, ETIMEDOUT);
        this.libc.pollIn([this.fd], left);
        continue;
      }
      for (const message of decodeMessages(this.buffer.subarray(0, n))) {
        if (message.seq !== seq) continue;
        if (message.type === NLMSG_ERROR || message.type === NLMSG_DONE) {
          const errno = errorOf(message);
          if (errno !== 0) throw new SysError(operation, errno);
          return replies;
        }
        replies.push(Buffer.from(message.payload)); // the receive buffer is reused
        if ((message.flags & NLM_F_MULTI) === 0) return replies;
      }
    }
  }
}

/**
 * A socket subscribed to rtnetlink notifications: readable means "something changed". Callers either drain it and read
 * the state again, or read the notifications themselves.
 */
export class RtnlEvents {
  private readonly buffer = Buffer.alloc(RECEIVE_BYTES);

  constructor(
    private readonly libc: Libc,
    /** The socket, for poll(2). */
    readonly fd: number,
  ) {}

  /** Discards every queued notification. */
  drain(): void {
    this.take();
  }

  /**
   * Every queued notification, without waiting; `overflowed` when the kernel dropped some (ENOBUFS, a busy node):
   * the messages are then incomplete and the caller reads the state again.
   */
  take(): { messages: NetlinkMessage[]; overflowed: boolean } {
    const messages: NetlinkMessage[] = [];
    let overflowed = false;
    for (;;) {
      let n;
      try {
        n = this.libc.recvNow(this.fd, this.buffer);
      } catch (err) {
        // ENOBUFS: notifications overflowed. Still a change: the caller re-reads.
        if (!hasErrno(err, 'ENOBUFS')) throw err;
        overflowed = true;
        continue;
      }
      if (n === undefined) return { messages, overflowed };
      for (const m of decodeMessages(this.buffer.subarray(0, n))) {
        messages.push({ ...m, payload: Buffer.from(m.payload) }); // the receive buffer is reused
      }
    }
  }

  /** Closes the socket. */
  close(): void {
    this.libc.close(this.fd);
  }
}
