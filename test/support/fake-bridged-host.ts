// A bridged host for FakePod (daemon-fakes.ts): the pod's eth0 is a veth whose
// host side is a port of bridge cni0, so the node-local proof's window opens.
// The host's rtnetlink answers link lookups from a FakeNetns, neighbour reads
// (FDB and ARP/ND, gets and dumps) from `dumped`, and the window's notifications from `queued`;
// `calls` notes each window opened and each read, in order.
import type { HostSockets } from '../../src/sys/netns';
import type { Rtnl, RtnlEvents } from '../../src/sys/rtnl';
import { SysError } from '../../src/sys/sys-error';
import { encodeAttr, type NetlinkMessage } from '../../src/wire/netlink';
import { RTM_NEWNEIGH, type LinkInfo, type NeighEntry } from '../../src/wire/rtnetlink';
import { HOST_EVENTS_FD, link, POD_MAC } from './daemon-fakes';
import { fakeLink, fakeNetns, fakeRtnl, type FakeNetns } from './fake-rtnl';

/** The host-side veth of the pod's eth0, its bridge, and another port of that bridge. */
export const PORT = 7;
export const BRIDGE = 3;
export const TWIN = 9;
/** The fd of a node window's event socket (subscribed to neighbour notifications). */
export const WINDOW_FD = 52;
const AF_BRIDGE = 7;
const REACHABLE = 0x02;

/** The pod's eth0 as a veth whose peer is the host's PORT. */
export const bridgedPodLink = (): LinkInfo => link({ linkIndex: PORT, linkNetnsid: 0 });

export class BridgedHost {
  readonly ns: FakeNetns = fakeNetns({
    links: [
      fakeLink({ index: PORT, name: 'vethpod', linkIndex: 2, linkNetnsid: 1, master: BRIDGE }),
      fakeLink({ index: BRIDGE, name: 'cni0', kind: 'bridge' }),
      fakeLink({ index: TWIN, name: 'vethtwin' }),
    ],
  });
  /** What a dump of the neighbour tables gives (every family asked for, filtered). */
  dumped: NeighEntry[] = [];
  /** What the window's event socket holds next (taken once); `overflowed`: the notifications it says it lost. */
  queued: NetlinkMessage[] = [];
  overflowed = false;
  /** When set, the gets (FDB, neighbour) fail with this errno (95, EOPNOTSUPP: a kernel before 5.0). */
  getsFail: number | undefined;
  /** Windows opened (`open <groups>`), and the reads of the tables (neighTables), in order. */
  readonly calls: string[] = [];
  /** Windows opened (sockets with groups) and closed. */
  windows = 0;
  windowsClosed = 0;

  /** The host's sockets: the session's (no groups) or a node window's (neighbour notifications). */
  sockets(groups: readonly number[] | undefined): HostSockets {
    const tables = neighTables(() => this.dumped, this.calls);
    const failing = <T>(get: () => T): T => {
      const got = get();
      if (this.getsFail !== undefined) throw new SysError('RTM_GETNEIGH', this.getsFail);
      return got;
    };
    const gets: Pick<Rtnl, 'fdbEntry' | 'neighbour'> = {
      fdbEntry: (b, m) => failing(() => tables.fdbEntry(b, m)),
      neighbour: (f, i, d) => failing(() => tables.neighbour(f, i, d)),
    };
    const rtnl = { ...fakeRtnl(this.ns), ...tables, ...gets } as Rtnl;
    if (!groups) {
      const events = { fd: HOST_EVENTS_FD, drain: () => undefined, close: () => undefined } as unknown as RtnlEvents;
      return { rtnl, events, close: () => undefined };
    }
    this.windows++;
    this.calls.push(`open ${JSON.stringify(groups)}`);
    const take = () => ({ messages: this.queued.splice(0), overflowed: this.overflowed });
    return {
      rtnl,
      events: { fd: WINDOW_FD, take, close: () => undefined } as unknown as RtnlEvents,
      close: () => void this.windowsClosed++,
    };
  }
}

/**
 * A host's neighbour tables over `entries` (read afresh on each call), each read noted in `calls`: the dumps by
 * family, and the gets as the kernel answers them (the last entry listed for a MAC or an address is the current one).
 */
export function neighTables(
  entries: () => readonly NeighEntry[],
  calls: string[] = [],
): Pick<Rtnl, 'neighbours' | 'fdbEntry' | 'neighbour'> {
  const last = (match: (e: NeighEntry) => boolean): NeighEntry | undefined => entries().filter(match).at(-1);
  return {
    neighbours: (family) => (calls.push(`dump ${family}`), entries().filter((e) => e.family === family)),
    fdbEntry: (bridge, mac) => {
      calls.push(`get fdb ${bridge}`);
      const lladdr = Buffer.from(mac);
      return last((e) => e.family === AF_BRIDGE && e.master === bridge && !!e.lladdr?.equals(lladdr) && !e.vlan);
    },
    neighbour: (family, index, dst) => {
      calls.push(`get neigh ${family} ${index}`);
      const bytes = Buffer.from(dst);
      return last((e) => e.family === family && e.ifindex === index && !!e.dst?.equals(bytes));
    },
  };
}

/** The bridge's FDB entry for `mac` on `port`. */
export const fdbEntry = (port: number, mac = POD_MAC): NeighEntry => ({
  family: AF_BRIDGE,
  ifindex: port,
  state: REACHABLE,
  flags: 0,
  lladdr: mac,
  master: BRIDGE,
});

/** The RTM_NEWNEIGH notification of `entry`. */
export function neighNotification(entry: NeighEntry): NetlinkMessage {
  const ndmsg = Buffer.alloc(12);
  ndmsg[0] = entry.family;
  ndmsg.writeInt32LE(entry.ifindex, 4);
  ndmsg.writeUInt16LE(entry.state, 8);
  const master = Buffer.alloc(4);
  master.writeUInt32LE(entry.master!, 0);
  const payload = Buffer.concat([ndmsg, encodeAttr(2, entry.lladdr!), encodeAttr(9, master)]);
  return { type: RTM_NEWNEIGH, flags: 0, seq: 0, payload };
}

/** The node's neighbour entry on the bridge for the pod's `address` (10.88.0.x), held by `mac`. */
export const neighEntry = (address: string, mac: Buffer): NeighEntry => ({
  family: 2, // AF_INET
  ifindex: BRIDGE,
  state: REACHABLE,
  flags: 0,
  dst: Buffer.from(address.split('.').map(Number)),
  lladdr: mac,
});
