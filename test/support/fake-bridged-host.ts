// A bridged host for FakePod (daemon-fakes.ts): the pod's eth0 is a veth whose
// host side is a port of bridge cni0, so the node-local proof's window opens.
// The host's rtnetlink answers link lookups from a FakeNetns, neighbour reads
// (FDB and ARP/ND, gets and dumps) from `dumped`, and the window's notifications from `queued`.
import type { HostSockets } from '../../src/sys/netns';
import type { Rtnl } from '../../src/sys/rtnl';
import type { RtnlEvents } from '../../src/sys/rtnl-events';
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
  /** What the window's event socket holds next (taken once). */
  queued: NetlinkMessage[] = [];
  /** Windows opened (sockets with groups) and closed. */
  windows = 0;
  windowsClosed = 0;

  /** The host's sockets: the session's (no groups) or a node window's (neighbour notifications). */
  sockets(groups: readonly number[] | undefined): HostSockets {
    const rtnl = { ...fakeRtnl(this.ns), ...neighTables(() => this.dumped) } as Rtnl;
    if (!groups) {
      const events = { fd: HOST_EVENTS_FD, drain: () => undefined, close: () => undefined } as unknown as RtnlEvents;
      return { rtnl, events, close: () => undefined };
    }
    this.windows++;
    const take = () => ({ messages: this.queued.splice(0), overflowed: false });
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
