// Pure decoding of the rtnetlink attributes the `netlink` package leaves raw.

/** Walks a stream of struct nlattr and returns type → payload (last one wins). */
export function parseNestedAttrs(buf: Uint8Array): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  let off = 0;
  while (off + 4 <= b.length) {
    const len = b.readUInt16LE(off);
    const type = b.readUInt16LE(off + 2) & 0x3fff; // drop NLA_F_NESTED / NLA_F_NET_BYTEORDER
    if (len < 4 || off + len > b.length) break;
    out.set(type, b.subarray(off + 4, off + len));
    off += (len + 3) & ~3;
  }
  return out;
}

const IFLA_INFO_KIND = 1;
const IFLA_INFO_DATA = 2;
const IFLA_IPVLAN_MODE = 1;
const IFLA_BRPORT_STATE = 1;

/** The link kind from IFLA_LINKINFO ("veth", "bridge", "macvlan", …), if any. */
export function linkKind(linkinfo: Uint8Array | undefined): string | undefined {
  if (!linkinfo) return undefined;
  const kind = parseNestedAttrs(linkinfo).get(IFLA_INFO_KIND);
  return kind ? kind.toString('latin1').replace(/\0+$/, '') : undefined;
}

/** ipvlan modes as the kernel numbers them (IFLA_IPVLAN_MODE). */
export type IpvlanMode = 'l2' | 'l3' | 'l3s';

/** The ipvlan mode from IFLA_LINKINFO, when the link is an ipvlan. */
export function ipvlanMode(linkinfo: Uint8Array | undefined): IpvlanMode | undefined {
  if (!linkinfo || linkKind(linkinfo) !== 'ipvlan') return undefined;
  const data = parseNestedAttrs(linkinfo).get(IFLA_INFO_DATA);
  const mode = data ? parseNestedAttrs(data).get(IFLA_IPVLAN_MODE) : undefined;
  if (!mode || mode.length < 2) return 'l3'; // the kernel's default mode
  return (['l2', 'l3', 'l3s'] as const)[mode.readUInt16LE(0)];
}

/** Bridge port states (IFLA_BRPORT_STATE, BR_STATE_*). */
export const PortState = { Disabled: 0, Listening: 1, Learning: 2, Forwarding: 3, Blocking: 4 } as const;

/** IFLA_BRPORT_STATE from an AF_BRIDGE link's protinfo, if present. */
export function bridgePortState(protinfo: Map<number, Buffer> | undefined): number | undefined {
  const state = protinfo?.get(IFLA_BRPORT_STATE);
  return state && state.length >= 1 ? state[0] : undefined;
}
