// Pure: rtnetlink neighbour messages (struct ndmsg; rtnetlink(7), "RTM_NEWNEIGH"): the node's
// neighbour table (AF_INET, AF_INET6) and a bridge's forwarding database (AF_BRIDGE). No I/O.
import { encodeAttr, type NetlinkMessage, parseAttrs } from './netlink';
import { AF_BRIDGE } from './rtnetlink';

export const RTM_NEWNEIGH = 28;
export const RTM_DELNEIGH = 29;
export const RTM_GETNEIGH = 30;

/** ndm_state bits (NUD_*). A bridge FDB entry is PERMANENT (local), NOARP (static), REACHABLE or STALE (aged). */
export const NeighState = {
  Incomplete: 0x01,
  Reachable: 0x02,
  Stale: 0x04,
  Delay: 0x08,
  Probe: 0x10,
  Failed: 0x20,
  NoArp: 0x40,
  Permanent: 0x80,
} as const;

/** NUD_VALID: the states in which an entry holds a link-layer address. */
export const NUD_VALID =
  NeighState.Permanent |
  NeighState.NoArp |
  NeighState.Reachable |
  NeighState.Probe |
  NeighState.Stale |
  NeighState.Delay;

/** ndm_flags bits (NTF_*). */
export const NeighFlag = { Self: 0x02, Master: 0x04, Proxy: 0x08, ExtLearned: 0x10 } as const;

const NDA_DST = 1;
const NDA_LLADDR = 2;
const NDA_VLAN = 5;
const NDA_MASTER = 9;

const NDMSG = 12;

/** One neighbour or FDB entry as the kernel reports it. */
export interface NeighEntry {
  /** AF_INET, AF_INET6 or AF_BRIDGE. */
  family: number;
  /** The link the entry is on: for an FDB entry, the bridge port (or the bridge itself for its own addresses). */
  ifindex: number;
  /** ndm_state (NeighState bits). */
  state: number;
  /** ndm_flags (NeighFlag bits). */
  flags: number;
  /** NDA_DST: the IP address (neighbours); absent from most FDB entries. */
  dst?: Buffer;
  /** NDA_LLADDR: the MAC (the neighbour's, or the FDB entry's key). */
  lladdr?: Buffer;
  /** NDA_MASTER: the bridge an FDB entry belongs to. */
  master?: number;
  /** NDA_VLAN: the VLAN of an FDB entry on a VLAN-filtering bridge. */
  vlan?: number;
}

/** A neighbour notification: an entry added or changed (RTM_NEWNEIGH) or removed (RTM_DELNEIGH). */
export interface NeighChange {
  entry: NeighEntry;
  deleted: boolean;
}

/** RTM_GETNEIGH dump payload (struct ndmsg) for `family`: AF_BRIDGE for every bridge FDB, AF_INET/AF_INET6. */
export function neighDumpPayload(family: number): Buffer {
  return ndmsg(family, 0);
}

/**
 * RTM_GETNEIGH get payload (Linux 5.0: neigh_get) for the neighbour entry of `dst` (4 or 16 bytes) on link `ifindex`.
 */
export function neighGetPayload(family: number, ifindex: number, dst: Uint8Array): Buffer {
  return Buffer.concat([ndmsg(family, ifindex), encodeAttr(NDA_DST, dst)]);
}

/**
 * RTM_GETNEIGH get payload (Linux 5.0: rtnl_fdb_get) for the FDB entry of `mac` on bridge `bridgeIndex`, VLAN 0 (a
 * bridge without VLAN filtering keys every entry there).
 */
export function fdbGetPayload(bridgeIndex: number, mac: Uint8Array): Buffer {
  const master = Buffer.alloc(4);
  master.writeUInt32LE(bridgeIndex, 0);
  return Buffer.concat([ndmsg(AF_BRIDGE, 0), encodeAttr(NDA_LLADDR, mac), encodeAttr(NDA_MASTER, master)]);
}

/** struct ndmsg: family, ifindex; state, flags and type 0. */
function ndmsg(family: number, ifindex: number): Buffer {
  const out = Buffer.alloc(NDMSG);
  out[0] = family;
  out.writeInt32LE(ifindex, 4);
  return out;
}

/** Decodes an RTM_NEWNEIGH/RTM_DELNEIGH payload (ndmsg + attributes), or undefined when too short. */
export function parseNeigh(payload: Buffer): NeighEntry | undefined {
  if (payload.length < NDMSG) return undefined;
  const a = parseAttrs(payload.subarray(NDMSG));
  const entry: NeighEntry = {
    family: payload[0]!,
    ifindex: payload.readInt32LE(4),
    state: payload.readUInt16LE(8),
    flags: payload[10]!,
  };
  const dst = a.get(NDA_DST);
  const lladdr = a.get(NDA_LLADDR);
  const master = a.get(NDA_MASTER);
  const vlan = a.get(NDA_VLAN);
  // Copies: the payload may sit in a receive buffer that is reused.
  if (dst) entry.dst = Buffer.from(dst);
  if (lladdr) entry.lladdr = Buffer.from(lladdr);
  if (master && master.length >= 4) entry.master = master.readUInt32LE(0);
  if (vlan && vlan.length >= 2) entry.vlan = vlan.readUInt16LE(0);
  return entry;
}

/** The neighbour change a notification carries, or undefined for other messages. */
export function parseNeighChange(message: NetlinkMessage): NeighChange | undefined {
  if (message.type !== RTM_NEWNEIGH && message.type !== RTM_DELNEIGH) return undefined;
  const entry = parseNeigh(message.payload);
  return entry ? { entry, deleted: message.type === RTM_DELNEIGH } : undefined;
}
