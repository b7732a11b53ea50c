// Pure: the rtnetlink messages the announcer speaks (rtnetlink(7)): links (queries, bridge port
// state, a MAC change), addresses, routes (a family's dump, each route's next hop), and
// neighbours: the node's neighbour table (AF_INET, AF_INET6) and a bridge's forwarding database
// (AF_BRIDGE). No I/O.
import { encodeAttr, type NetlinkMessage, parseAttrs } from './netlink';

export const RTM_NEWLINK = 16;
export const RTM_GETLINK = 18;
export const RTM_SETLINK = 19;
export const RTM_NEWADDR = 20;
export const RTM_GETADDR = 22;
export const RTM_GETROUTE = 26;
export const RTM_NEWNEIGH = 28;
export const RTM_DELNEIGH = 29;
export const RTM_GETNEIGH = 30;

/** Multicast groups (RTNLGRP_*) for change notifications. */
export const RtnlGroup = { Link: 1, Neigh: 3, Ipv4Ifaddr: 5, Ipv6Ifaddr: 9 } as const;

const AF_UNSPEC = 0;
export const AF_INET = 2;
/** AF_BRIDGE: link messages of this family carry the bridge port state. */
export const AF_BRIDGE = 7;
export const AF_INET6 = 10;

/** Link attributes (IFLA_*), and those nested in IFLA_LINKINFO (IFLA_INFO_*). */
const IFLA = { ADDRESS: 1, IFNAME: 3, LINK: 5, MASTER: 10, PROTINFO: 12, LINKINFO: 18, EXT_MASK: 29, LINK_NETNSID: 37 };
const IFLA_INFO = { KIND: 1, DATA: 2 };
const IFLA_IPVLAN_MODE = 1;
const IFLA_BRPORT_STATE = 1;
/** RTEXT_FILTER_SKIP_STATS: link statistics are large and unused. */
const RTEXT_FILTER_SKIP_STATS = 1 << 3;

/** Address attributes (IFA_*). */
const IFA = { ADDRESS: 1, LOCAL: 2, FLAGS: 8 };
/** Link flags (IFF_*) and address flags (IFA_F_*). */
const IFF = { UP: 0x1, RUNNING: 0x40, NOARP: 0x80 };
const IFA_F = { OPTIMISTIC: 0x04, DADFAILED: 0x08, TENTATIVE: 0x40 };

/** rtm_type RTN_UNICAST: a route to a gateway or a direct route (not local, broadcast, blackhole…). */
const RTN_UNICAST = 1;
/** Route attributes (RTA_*) and neighbour attributes (NDA_*). */
const RTA = { OIF: 4, GATEWAY: 5, TABLE: 15 };
const NDA = { DST: 1, LLADDR: 2, VLAN: 5, MASTER: 9 };

const IFINFOMSG = 16;
const IFADDRMSG = 8;
const RTMSG = 12;
const NDMSG = 12;

/** ipvlan modes as the kernel numbers them (IFLA_IPVLAN_MODE). */
const IPVLAN_MODES = ['l2', 'l3', 'l3s'] as const;

/** Bridge port states (IFLA_BRPORT_STATE, BR_STATE_*). */
export const PortState = { Disabled: 0, Listening: 1, Learning: 2, Forwarding: 3, Blocking: 4 } as const;

/** What the plugin needs to know about one link. */
export interface LinkInfo {
  index: number;
  name: string;
  mac: Buffer | undefined;
  /** IFF_UP: administratively up. */
  up: boolean;
  /** IFF_RUNNING: up with carrier (for a veth, the peer is up too). */
  running: boolean;
  noarp: boolean;
  /** IFLA_LINK: the peer (veth) or parent (macvlan/ipvlan/vlan) ifindex. */
  linkIndex: number | undefined;
  /** IFLA_LINK_NETNSID: set when linkIndex lives in another netns. */
  linkNetnsid: number | undefined;
  kind: string | undefined;
  ipvlanMode: (typeof IPVLAN_MODES)[number] | undefined;
  /** IFLA_BRPORT_STATE, present in AF_BRIDGE messages of bridge ports. */
  portState: number | undefined;
  /** IFLA_MASTER: the bridge (or bond) a port is enslaved to. */
  master?: number | undefined;
}

/** One address of a link, with the DAD flags that decide whether it may be announced. */
export interface AddressInfo {
  index: number;
  family: 4 | 6;
  bytes: Buffer;
  prefixLength: number;
  tentative: boolean;
  dadFailed: boolean;
  optimistic: boolean;
}

/** One unicast route with its next hop, as the kernel reports it. */
export interface RouteEntry {
  family: number;
  /** The destination's prefix length (0: a default route). */
  dstLen: number;
  /** The routing table (RTA_TABLE when present, else rtm_table). */
  table: number;
  /** RTA_OIF: the link the route leaves through. */
  oif?: number;
  /** RTA_GATEWAY: the next hop; absent for a direct route. */
  gateway?: Buffer;
}

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

const { Permanent, NoArp, Reachable, Probe, Stale, Delay } = NeighState;
/** NUD_VALID: the states in which an entry holds a link-layer address. */
export const NUD_VALID = Permanent | NoArp | Reachable | Probe | Stale | Delay;

/** ndm_flags bits (NTF_*). */
export const NeighFlag = { Self: 0x02, Master: 0x04, Proxy: 0x08, ExtLearned: 0x10 } as const;

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
export type NeighChange = { entry: NeighEntry; deleted: boolean };

/**
 * A zeroed header struct of `size` bytes, its family first: ifinfomsg, ifaddrmsg and ndmsg hold a link index at 4
 * (rtmsg's bytes there stay 0).
 */
function header(size: number, family: number, index = 0): Buffer {
  const out = Buffer.alloc(size);
  out[0] = family;
  out.writeInt32LE(index, 4);
  return out;
}

/** A u32 attribute's value, in the host's byte order as netlink has it. */
function u32(value: number): Buffer {
  return Buffer.from(Uint32Array.of(value).buffer);
}

/** A u32 attribute's value; undefined when absent or short. */
function u32At(attr: Buffer | undefined): number | undefined {
  return attr && attr.length >= 4 ? attr.readUInt32LE(0) : undefined;
}

/** RTM_GETLINK payload for one link, by index or by name, without statistics. */
export function getLinkPayload(target: { index: number } | { name: string }): Buffer {
  const byName = 'name' in target;
  return Buffer.concat([
    header(IFINFOMSG, AF_UNSPEC, byName ? 0 : target.index),
    ...(byName ? [encodeAttr(IFLA.IFNAME, Buffer.from(`${target.name}\0`, 'utf8'))] : []),
    encodeAttr(IFLA.EXT_MASK, u32(RTEXT_FILTER_SKIP_STATS)),
  ]);
}

/** RTM_GETLINK dump payload of the bridge ports (AF_BRIDGE). */
export function bridgePortDumpPayload(): Buffer {
  return header(IFINFOMSG, AF_BRIDGE);
}

/** RTM_GETADDR dump payload (every address of every link). */
export function addressDumpPayload(): Buffer {
  return header(IFADDRMSG, AF_UNSPEC);
}

/** RTM_SETLINK payload that sets link `index`'s MAC. */
export function setMacPayload(index: number, mac: Uint8Array): Buffer {
  return Buffer.concat([header(IFINFOMSG, AF_UNSPEC, index), encodeAttr(IFLA.ADDRESS, mac)]);
}

/** Decodes an RTM_NEWLINK payload (ifinfomsg + attributes), or undefined when too short. */
export function parseLink(payload: Buffer): LinkInfo | undefined {
  if (payload.length < IFINFOMSG) return undefined;
  const index = payload.readInt32LE(4);
  const flags = payload.readUInt32LE(8);
  const a = parseAttrs(payload.subarray(IFINFOMSG));
  const netnsid = a.get(IFLA.LINK_NETNSID);
  const protinfo = a.get(IFLA.PROTINFO);
  const state = protinfo ? parseAttrs(protinfo).get(IFLA_BRPORT_STATE) : undefined;
  return {
    index,
    name: cString(a.get(IFLA.IFNAME)),
    mac: a.get(IFLA.ADDRESS),
    up: (flags & IFF.UP) !== 0,
    running: (flags & IFF.RUNNING) !== 0,
    noarp: (flags & IFF.NOARP) !== 0,
    linkIndex: u32At(a.get(IFLA.LINK)),
    linkNetnsid: netnsid && netnsid.length >= 4 ? netnsid.readInt32LE(0) : undefined,
    ...linkKind(a.get(IFLA.LINKINFO)),
    portState: state && state.length >= 1 ? state[0] : undefined,
    master: u32At(a.get(IFLA.MASTER)),
  };
}

/** Decodes an RTM_NEWADDR payload (ifaddrmsg + attributes); undefined for families other than IPv4/IPv6. */
export function parseAddress(payload: Buffer): AddressInfo | undefined {
  if (payload.length < IFADDRMSG) return undefined;
  const family = payload[0] === AF_INET ? 4 : payload[0] === AF_INET6 ? 6 : undefined;
  const a = parseAttrs(payload.subarray(IFADDRMSG));
  // IFA_LOCAL is the interface's own address on point-to-point links; IFA_ADDRESS otherwise.
  const bytes = a.get(IFA.LOCAL) ?? a.get(IFA.ADDRESS);
  if (!family || !bytes || bytes.length !== (family === 4 ? 4 : 16)) return undefined;
  // IFA_FLAGS (32 bit) supersedes ifa_flags (8 bit) when present.
  const flags = u32At(a.get(IFA.FLAGS)) ?? payload[2]!;
  return {
    index: payload.readUInt32LE(4),
    family,
    bytes: Buffer.from(bytes),
    prefixLength: payload[1]!,
    tentative: (flags & IFA_F.TENTATIVE) !== 0,
    dadFailed: (flags & IFA_F.DADFAILED) !== 0,
    optimistic: (flags & IFA_F.OPTIMISTIC) !== 0,
  };
}

/** The link kind from IFLA_LINKINFO ("veth", "bridge", "macvlan", …) and, for an ipvlan, its mode. */
function linkKind(linkinfo: Buffer | undefined) {
  const info = linkinfo ? parseAttrs(linkinfo) : undefined;
  const kind = info?.has(IFLA_INFO.KIND) ? cString(info.get(IFLA_INFO.KIND)) : undefined;
  if (kind !== 'ipvlan') return { kind, ipvlanMode: undefined };
  const data = info?.get(IFLA_INFO.DATA);
  const mode = data ? parseAttrs(data).get(IFLA_IPVLAN_MODE) : undefined;
  // Without IFLA_IPVLAN_MODE, the kernel's default mode.
  return { kind, ipvlanMode: !mode || mode.length < 2 ? 'l3' : IPVLAN_MODES[mode.readUInt16LE(0)] };
}

/** RTM_GETROUTE dump payload: every route of `family` (AF_INET or AF_INET6), all tables. */
export function routeDumpPayload(family: number): Buffer {
  return header(RTMSG, family);
}

/** Decodes an RTM_NEWROUTE payload; undefined when too short or not a unicast route. */
export function parseRoute(payload: Buffer): RouteEntry | undefined {
  if (payload.length < RTMSG || payload[7] !== RTN_UNICAST) return undefined;
  const a = parseAttrs(payload.subarray(RTMSG));
  const oif = u32At(a.get(RTA.OIF));
  const gateway = a.get(RTA.GATEWAY);
  const entry: RouteEntry = { family: payload[0]!, dstLen: payload[1]!, table: u32At(a.get(RTA.TABLE)) ?? payload[4]! };
  if (oif !== undefined) entry.oif = oif;
  if (gateway && (gateway.length === 4 || gateway.length === 16)) entry.gateway = Buffer.from(gateway);
  return entry;
}

/** RTM_GETNEIGH dump payload (struct ndmsg) for `family`: AF_BRIDGE for every bridge FDB, AF_INET/AF_INET6. */
export function neighDumpPayload(family: number): Buffer {
  return header(NDMSG, family);
}

/**
 * RTM_GETNEIGH get payload (Linux 5.0: neigh_get) for the neighbour entry of `dst` (4 or 16 bytes) on link `ifindex`.
 */
export function neighGetPayload(family: number, ifindex: number, dst: Uint8Array): Buffer {
  return Buffer.concat([header(NDMSG, family, ifindex), encodeAttr(NDA.DST, dst)]);
}

/**
 * RTM_GETNEIGH get payload (Linux 5.0: rtnl_fdb_get) for the FDB entry of `mac` on bridge `bridgeIndex`, VLAN 0 (a
 * bridge without VLAN filtering keys every entry there).
 */
export function fdbGetPayload(bridgeIndex: number, mac: Uint8Array): Buffer {
  return Buffer.concat([
    header(NDMSG, AF_BRIDGE),
    encodeAttr(NDA.LLADDR, mac),
    encodeAttr(NDA.MASTER, u32(bridgeIndex)),
  ]);
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
  const dst = a.get(NDA.DST);
  const lladdr = a.get(NDA.LLADDR);
  const master = u32At(a.get(NDA.MASTER));
  const vlan = a.get(NDA.VLAN);
  // Copies: the payload may sit in a receive buffer that is reused.
  if (dst) entry.dst = Buffer.from(dst);
  if (lladdr) entry.lladdr = Buffer.from(lladdr);
  if (master !== undefined) entry.master = master;
  if (vlan && vlan.length >= 2) entry.vlan = vlan.readUInt16LE(0);
  return entry;
}

/** The neighbour change a notification carries, or undefined for other messages. */
export function parseNeighChange(message: NetlinkMessage): NeighChange | undefined {
  if (message.type !== RTM_NEWNEIGH && message.type !== RTM_DELNEIGH) return undefined;
  const entry = parseNeigh(message.payload);
  return entry ? { entry, deleted: message.type === RTM_DELNEIGH } : undefined;
}

function cString(bytes: Buffer | undefined): string {
  return bytes ? bytes.toString('utf8').replace(/\0+$/, '') : '';
}
