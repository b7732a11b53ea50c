// Pure: the few rtnetlink messages the announcer speaks (rtnetlink(7)): link and
// address queries, bridge port state, a MAC change. No I/O.
import { encodeAttr, parseAttrs } from './netlink';

export const RTM_NEWLINK = 16;
export const RTM_GETLINK = 18;
export const RTM_SETLINK = 19;
export const RTM_NEWADDR = 20;
export const RTM_GETADDR = 22;

/** Multicast groups (RTNLGRP_*) for change notifications. */
export const RtnlGroup = { Link: 1, Neigh: 3, Ipv4Ifaddr: 5, Ipv6Ifaddr: 9 } as const;

const AF_UNSPEC = 0;
export const AF_INET = 2;
/** AF_BRIDGE: link messages of this family carry the bridge port state. */
export const AF_BRIDGE = 7;
export const AF_INET6 = 10;

const IFLA_ADDRESS = 1;
const IFLA_IFNAME = 3;
const IFLA_LINK = 5;
const IFLA_MASTER = 10;
const IFLA_PROTINFO = 12;
const IFLA_LINKINFO = 18;
const IFLA_EXT_MASK = 29;
const IFLA_LINK_NETNSID = 37;
const IFLA_INFO_KIND = 1;
const IFLA_INFO_DATA = 2;
const IFLA_IPVLAN_MODE = 1;
const IFLA_BRPORT_STATE = 1;
/** RTEXT_FILTER_SKIP_STATS: link statistics are large and unused. */
const RTEXT_FILTER_SKIP_STATS = 1 << 3;

const IFA_ADDRESS = 1;
const IFA_LOCAL = 2;
const IFA_FLAGS = 8;

const IFF_UP = 0x1;
const IFF_RUNNING = 0x40;
const IFF_NOARP = 0x80;
const IFA_F_OPTIMISTIC = 0x04;
const IFA_F_DADFAILED = 0x08;
const IFA_F_TENTATIVE = 0x40;

const IFINFOMSG = 16;
const IFADDRMSG = 8;

/** ipvlan modes as the kernel numbers them (IFLA_IPVLAN_MODE). */
export type IpvlanMode = 'l2' | 'l3' | 'l3s';

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
  ipvlanMode: IpvlanMode | undefined;
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

function ifinfomsg(family: number, index: number): Buffer {
  const out = Buffer.alloc(IFINFOMSG);
  out[0] = family;
  out.writeInt32LE(index, 4);
  return out;
}

function u32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32LE(value, 0);
  return out;
}

/** RTM_GETLINK payload for one link, by index or by name, without statistics. */
export function getLinkPayload(target: { index: number } | { name: string }): Buffer {
  const byName = 'name' in target;
  return Buffer.concat([
    ifinfomsg(AF_UNSPEC, byName ? 0 : target.index),
    ...(byName ? [encodeAttr(IFLA_IFNAME, Buffer.from(`${target.name}\0`, 'latin1'))] : []),
    encodeAttr(IFLA_EXT_MASK, u32(RTEXT_FILTER_SKIP_STATS)),
  ]);
}

/** RTM_GETLINK dump payload of the bridge ports (AF_BRIDGE). */
export function bridgePortDumpPayload(): Buffer {
  return ifinfomsg(AF_BRIDGE, 0);
}

/** RTM_GETADDR dump payload (every address of every link). */
export function addressDumpPayload(): Buffer {
  return Buffer.alloc(IFADDRMSG); // ifa_family AF_UNSPEC
}

/** RTM_SETLINK payload that sets link `index`'s MAC. */
export function setMacPayload(index: number, mac: Uint8Array): Buffer {
  return Buffer.concat([ifinfomsg(AF_UNSPEC, index), encodeAttr(IFLA_ADDRESS, mac)]);
}

/** Decodes an RTM_NEWLINK payload (ifinfomsg + attributes), or undefined when too short. */
export function parseLink(payload: Buffer): LinkInfo | undefined {
  if (payload.length < IFINFOMSG) return undefined;
  const index = payload.readInt32LE(4);
  const flags = payload.readUInt32LE(8);
  const a = parseAttrs(payload.subarray(IFINFOMSG));
  const link = a.get(IFLA_LINK);
  const netnsid = a.get(IFLA_LINK_NETNSID);
  const linkinfo = a.get(IFLA_LINKINFO);
  const protinfo = a.get(IFLA_PROTINFO);
  const state = protinfo ? parseAttrs(protinfo).get(IFLA_BRPORT_STATE) : undefined;
  return {
    index,
    name: cString(a.get(IFLA_IFNAME)),
    mac: a.get(IFLA_ADDRESS),
    up: (flags & IFF_UP) !== 0,
    running: (flags & IFF_RUNNING) !== 0,
    noarp: (flags & IFF_NOARP) !== 0,
    linkIndex: link && link.length >= 4 ? link.readUInt32LE(0) : undefined,
    linkNetnsid: netnsid && netnsid.length >= 4 ? netnsid.readInt32LE(0) : undefined,
    kind: linkKind(linkinfo),
    ipvlanMode: ipvlanMode(linkinfo),
    portState: state && state.length >= 1 ? state[0] : undefined,
    master: u32At(a.get(IFLA_MASTER)),
  };
}

function u32At(attr: Buffer | undefined): number | undefined {
  return attr && attr.length >= 4 ? attr.readUInt32LE(0) : undefined;
}

/** Decodes an RTM_NEWADDR payload (ifaddrmsg + attributes); undefined for families other than IPv4/IPv6. */
export function parseAddress(payload: Buffer): AddressInfo | undefined {
  if (payload.length < IFADDRMSG) return undefined;
  const family = payload[0] === AF_INET ? 4 : payload[0] === AF_INET6 ? 6 : undefined;
  const a = parseAttrs(payload.subarray(IFADDRMSG));
  // IFA_LOCAL is the interface's own address on point-to-point links; IFA_ADDRESS otherwise.
  const bytes = a.get(IFA_LOCAL) ?? a.get(IFA_ADDRESS);
  if (!family || !bytes || bytes.length !== (family === 4 ? 4 : 16)) return undefined;
  // IFA_FLAGS (32 bit) supersedes ifa_flags (8 bit) when present.
  const extended = a.get(IFA_FLAGS);
  const flags = extended && extended.length >= 4 ? extended.readUInt32LE(0) : payload[2]!;
  return {
    index: payload.readUInt32LE(4),
    family,
    bytes: Buffer.from(bytes),
    prefixLength: payload[1]!,
    tentative: (flags & IFA_F_TENTATIVE) !== 0,
    dadFailed: (flags & IFA_F_DADFAILED) !== 0,
    optimistic: (flags & IFA_F_OPTIMISTIC) !== 0,
  };
}

/** The link kind from IFLA_LINKINFO ("veth", "bridge", "macvlan", …), if any. */
export function linkKind(linkinfo: Uint8Array | undefined): string | undefined {
  if (!linkinfo) return undefined;
  const kind = parseAttrs(linkinfo).get(IFLA_INFO_KIND);
  return kind ? cString(kind) : undefined;
}

/** The ipvlan mode from IFLA_LINKINFO, when the link is an ipvlan. */
export function ipvlanMode(linkinfo: Uint8Array | undefined): IpvlanMode | undefined {
  if (!linkinfo || linkKind(linkinfo) !== 'ipvlan') return undefined;
  const data = parseAttrs(linkinfo).get(IFLA_INFO_DATA);
  const mode = data ? parseAttrs(data).get(IFLA_IPVLAN_MODE) : undefined;
  if (!mode || mode.length < 2) return 'l3'; // the kernel's default mode
  return (['l2', 'l3', 'l3s'] as const)[mode.readUInt16LE(0)];
}

function cString(bytes: Buffer | undefined): string {
  return bytes ? bytes.toString('latin1').replace(/\0+$/, '') : '';
}
