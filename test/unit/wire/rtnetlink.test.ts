import { describe, it, expect } from 'vitest';
import { encodeMessage, NLM_F_DUMP, NLM_F_REQUEST, parseAttrs as parseNestedAttrs } from '../../../src/wire/netlink';
import {
  AF_BRIDGE,
  AF_INET,
  AF_INET6,
  addressDumpPayload,
  bridgePortDumpPayload,
  fdbGetPayload,
  getLinkPayload,
  neighDumpPayload,
  neighGetPayload,
  parseAddress,
  parseLink,
  parseNeigh,
  parseNeighChange,
  parseRoute,
  PortState,
  RTM_DELNEIGH,
  RTM_GETNEIGH,
  RTM_NEWNEIGH,
  routeDumpPayload,
  RtnlGroup,
  setMacPayload,
} from '../../../src/wire/rtnetlink';

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');
const entries = (m: Map<number, Buffer>): [number, string][] =>
  [...m].map(([type, payload]) => [type, payload.toString('hex')]);

/** struct nlattr: u16 len (header + payload, unpadded), u16 type, payload, padding to 4. Little-endian host. */
function nla(type: number, payload: Uint8Array): Buffer {
  const len = 4 + payload.length;
  const out = Buffer.alloc((len + 3) & ~3);
  out.writeUInt16LE(len, 0);
  out.writeUInt16LE(type, 2);
  out.set(payload, 4);
  return out;
}

const NLA_F_NESTED = 0x8000;
const u16 = (v: number): Buffer => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(v, 0);
  return b;
};
const cstr = (s: string): Buffer => Buffer.from(`${s}\0`, 'latin1');

/** IFLA_LINKINFO of an ipvlan: IFLA_INFO_KIND "ipvlan", IFLA_INFO_DATA { IFLA_IPVLAN_MODE u16 }. */
const ipvlanInfo = (mode: number): Buffer =>
  Buffer.concat([nla(1, cstr('ipvlan')), nla(2 | NLA_F_NESTED, Buffer.concat([nla(1, u16(mode)), nla(2, u16(0))]))]);

describe('parseNestedAttrs', () => {
  it.each([
    // len 9 type 1 (IFLA_INFO_KIND) "veth\0" + padding to 12; len 8 type 3, u32 42
    [
      'walks attributes and skips the padding to 4 bytes',
      '0900 0100 7665746800 000000 0800 0300 2a000000',
      [
        [1, '7665746800'],
        [3, '2a000000'],
      ],
    ],
    // len 12 type 0x8002 (IFLA_INFO_DATA | NLA_F_NESTED) holding len 6 type 1 u16 1 + padding; len 8 type 0x4005
    // (5 | NLA_F_NET_BYTEORDER)
    [
      'masks NLA_F_NESTED and NLA_F_NET_BYTEORDER out of the type',
      '0c00 0280 0600 0100 0100 0000 0800 0540 0a580005',
      [
        [2, '0600010001000000'],
        [5, '0a580005'],
      ],
    ],
    [
      'accepts a last attribute without trailing padding',
      '0800 0100 01020304 0500 0200 ff',
      [
        [1, '01020304'],
        [2, 'ff'],
      ],
    ],
    ['keeps an empty payload', '0400 0700', [[7, '']]],
    ['lets the last attribute of a type win', '0500 0100 01 000000 0500 0100 02 000000', [[1, '02']]],
    // the second claims 12 bytes, has 8
    [
      'stops at an attribute that runs past the end, keeping the ones before',
      '0800 0100 01020304 0c00 0200 aabbccdd',
      [[1, '01020304']],
    ],
    [
      'stops at a length below the 4-byte header',
      '0800 0100 01020304 0200 0200 aabbccdd 0800 0300 05060708',
      [[1, '01020304']],
    ],
    ['ignores a trailing fragment shorter than a header', '0800 0100 01020304 0800 02', [[1, '01020304']]],
    ['returns an empty map for an empty buffer', '', []],
  ])('%s', (_what, hex, expected) => {
    expect(entries(parseNestedAttrs(bytes(hex)))).toEqual(expected);
  });

  it('reads a view that starts inside a larger buffer', () => {
    const outer = bytes('deadbeef' + '0800 0100 01020304' + 'cafe');
    const view = new Uint8Array(outer.buffer, outer.byteOffset + 4, 8);
    expect(entries(parseNestedAttrs(view))).toEqual([[1, '01020304']]);
  });
});

/** IFLA_LINKINFO of a link of `kind`, with IFLA_INFO_DATA holding `data` when given. */
const linkinfo = (kind: Buffer, data?: Buffer): Buffer =>
  Buffer.concat([nla(1, kind), ...(data ? [nla(2 | NLA_F_NESTED, data)] : [])]);

describe('parseLink: the kind and the ipvlan mode', () => {
  it.each([
    ['the kind without its NUL terminator', bytes('0900 0100 7665746800 000000'), 'veth', undefined],
    ['the kind of a bridge', linkinfo(cstr('bridge')), 'bridge', undefined],
    ['a kind that has no NUL terminator', linkinfo(Buffer.from('macvlan', 'latin1')), 'macvlan', undefined],
    ['no kind without linkinfo', undefined, undefined, undefined],
    ['no kind without IFLA_INFO_KIND', nla(2 | NLA_F_NESTED, nla(1, u16(0))), undefined, undefined],
    ['IFLA_IPVLAN_MODE 0 as l2', ipvlanInfo(0), 'ipvlan', 'l2'],
    ['IFLA_IPVLAN_MODE 1 as l3', ipvlanInfo(1), 'ipvlan', 'l3'],
    ['IFLA_IPVLAN_MODE 2 as l3s', ipvlanInfo(2), 'ipvlan', 'l3s'],
    // len 11 IFLA_INFO_KIND "ipvlan\0" + 1 padding; len 12 IFLA_INFO_DATA | NLA_F_NESTED: IFLA_IPVLAN_MODE 2 (l3s)
    [
      'the hand-assembled l3s linkinfo',
      bytes('0b00 0100 6970766c616e00 00 0c00 0280 0600 0100 0200 0000'),
      'ipvlan',
      'l3s',
    ],
    ["l3 (the kernel's default) without IFLA_INFO_DATA", linkinfo(cstr('ipvlan')), 'ipvlan', 'l3'],
    ["l3 (the kernel's default) without IFLA_IPVLAN_MODE", linkinfo(cstr('ipvlan'), nla(2, u16(1))), 'ipvlan', 'l3'],
    [
      "l3 (the kernel's default) for a one-byte IFLA_IPVLAN_MODE",
      linkinfo(cstr('ipvlan'), nla(1, bytes('00'))),
      'ipvlan',
      'l3',
    ],
    ['no ipvlan mode for a macvlan with mode data', linkinfo(cstr('macvlan'), nla(1, u16(0))), 'macvlan', undefined],
  ])('reads %s', (_what, info, kind, mode) => {
    const attrs = info ? [nla(18 | NLA_F_NESTED, info)] : [];
    const link = parseLink(Buffer.concat([ifinfomsg(0, 1, 0), ...attrs]))!;
    expect([link.kind, link.ipvlanMode]).toEqual([kind, mode]);
  });
});

/** struct ifinfomsg: family, pad, type, index, flags, change. */
function ifinfomsg(family: number, index: number, flags: number): Buffer {
  const out = Buffer.alloc(16);
  out[0] = family;
  out.writeUInt16LE(1, 2); // ARPHRD_ETHER
  out.writeInt32LE(index, 4);
  out.writeUInt32LE(flags, 8);
  return out;
}
const u32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v, 0);
  return b;
};

describe('rtnetlink requests', () => {
  const hex = (spaced: string): string => spaced.replace(/\s/g, '');
  // ifinfomsg: AF_UNSPEC, index 7 (or 0); IFLA_EXT_MASK (29) = RTEXT_FILTER_SKIP_STATS
  it('asks for one link by index, without statistics', () => {
    expect(getLinkPayload({ index: 7 }).toString('hex')).toBe(
      hex('00 00 0000 07000000 00000000 00000000 0800 1d00 08000000'),
    );
  });

  it('asks for one link by name: index 0 and IFLA_IFNAME with its NUL', () => {
    // IFLA_IFNAME (3) "eth0\0", padded to 12
    const ifname = '0900 0300 6574683000 000000';
    expect(getLinkPayload({ name: 'eth0' }).toString('hex')).toBe(
      hex(`00 00 0000 00000000 00000000 00000000 ${ifname} 0800 1d00 08000000`),
    );
  });

  it("names a link in UTF-8, as the kernel stores CNI_IFNAME's bytes", () => {
    // IFLA_IFNAME "eth-é\0": é is c3 a9 in UTF-8 (one byte, e9, in latin1), 7 bytes, padded to 12
    const ifname = '0b00 0300 6574682dc3a900 00';
    expect(getLinkPayload({ name: 'eth-é' }).toString('hex')).toBe(
      hex(`00 00 0000 00000000 00000000 00000000 ${ifname} 0800 1d00 08000000`),
    );
    expect(parseLink(Buffer.concat([ifinfomsg(0, 4, 0), nla(3, Buffer.from('eth-é\0'))]))?.name).toBe('eth-é');
  });

  it('dumps bridge ports as AF_BRIDGE (7) and addresses as AF_UNSPEC', () => {
    expect(bridgePortDumpPayload().toString('hex')).toBe('07000000000000000000000000000000');
    expect(addressDumpPayload().toString('hex')).toBe('0000000000000000');
  });

  it('sets a MAC with IFLA_ADDRESS (1)', () => {
    expect(setMacPayload(3, bytes('0a580a580005')).toString('hex')).toBe(
      hex('00 00 0000 03000000 00000000 00000000 0a00 0100 0a580a580005 0000'),
    );
  });
});

describe('parseLink', () => {
  it('reads index, name, MAC, flags, peer, peer netns and kind', () => {
    const payload = Buffer.concat([
      ifinfomsg(0, 4, 0x1 | 0x40 | 0x1000), // IFF_UP | IFF_RUNNING | IFF_LOWER_UP
      nla(3, cstr('eth0')),
      nla(1, bytes('02420a580005')),
      nla(5, u32(12)), // IFLA_LINK
      nla(37, u32(0)), // IFLA_LINK_NETNSID 0
      nla(18 | NLA_F_NESTED, nla(1, cstr('veth'))), // IFLA_LINKINFO
    ]);
    expect(parseLink(payload)).toEqual({
      index: 4,
      name: 'eth0',
      mac: bytes('02420a580005'),
      up: true,
      running: true,
      noarp: false,
      linkIndex: 12,
      linkNetnsid: 0,
      kind: 'veth',
      ipvlanMode: undefined,
      portState: undefined,
    });
  });

  it('reads IFLA_BRPORT_STATE from the nested IFLA_PROTINFO of an AF_BRIDGE message', () => {
    const payload = Buffer.concat([
      ifinfomsg(7, 9, 0x1 | 0x80), // IFF_UP | IFF_NOARP
      nla(3, cstr('veth1')),
      nla(12 | NLA_F_NESTED, Buffer.concat([nla(2, u16(32)), nla(1, Buffer.from([3]))])),
    ]);
    const link = parseLink(payload)!;
    expect([link.portState, link.up, link.running, link.noarp, link.linkIndex]).toEqual([
      PortState.Forwarding,
      true,
      false,
      true,
      undefined,
    ]);
  });

  it('reads a link that is down, its name without the NULs that pad it, and no netns id from a short attribute', () => {
    const payload = Buffer.concat([ifinfomsg(0, 5, 0), nla(3, Buffer.from('eth1\0\0', 'latin1')), nla(37, u16(1))]);
    expect(parseLink(payload)).toMatchObject({
      index: 5,
      name: 'eth1',
      up: false,
      running: false,
      linkNetnsid: undefined,
    });
  });

  it('is undefined for a payload shorter than ifinfomsg', () => {
    expect(parseLink(Buffer.alloc(15))).toBeUndefined();
  });

  it('numbers the port states as BR_STATE_* does', () => {
    expect(PortState).toEqual({ Disabled: 0, Listening: 1, Learning: 2, Forwarding: 3, Blocking: 4 });
  });
});

describe('parseAddress', () => {
  /** struct ifaddrmsg: family, prefixlen, flags, scope, index. */
  const ifaddrmsg = (family: number, prefix: number, flags: number, index: number): Buffer => {
    const out = Buffer.alloc(8);
    out[0] = family;
    out[1] = prefix;
    out[2] = flags;
    out.writeUInt32LE(index, 4);
    return out;
  };

  it('reads an IPv4 address from IFA_LOCAL, preferred over IFA_ADDRESS', () => {
    const payload = Buffer.concat([ifaddrmsg(2, 24, 0x80, 4), nla(1, bytes('0a580001')), nla(2, bytes('0a580005'))]);
    expect(parseAddress(payload)).toEqual({
      index: 4,
      family: 4,
      bytes: bytes('0a580005'),
      prefixLength: 24,
      tentative: false,
      dadFailed: false,
      optimistic: false,
    });
  });

  it('reads DAD flags from the 8-bit ifa_flags', () => {
    const payload = Buffer.concat([ifaddrmsg(10, 64, 0x40, 4), nla(1, bytes('fd000088000000000000000000000005'))]);
    expect(parseAddress(payload)).toMatchObject({ family: 6, tentative: true, dadFailed: false, optimistic: false });
  });

  it('prefers the 32-bit IFA_FLAGS (8) when present', () => {
    const payload = Buffer.concat([
      ifaddrmsg(10, 64, 0x40, 4),
      nla(1, bytes('fd000088000000000000000000000005')),
      nla(8, u32(0x08 | 0x04)),
    ]);
    expect(parseAddress(payload)).toMatchObject({ tentative: false, dadFailed: true, optimistic: true });
  });

  it('skips other families and addresses of the wrong length', () => {
    expect(parseAddress(Buffer.concat([ifaddrmsg(17, 0, 0, 4), nla(1, bytes('0a580005'))]))).toBeUndefined();
    expect(parseAddress(Buffer.concat([ifaddrmsg(17, 0, 0, 4), nla(1, Buffer.alloc(16))]))).toBeUndefined();
    expect(parseAddress(ifaddrmsg(2, 24, 0, 4))).toBeUndefined(); // no address attribute
    expect(parseAddress(Buffer.concat([ifaddrmsg(2, 24, 0, 4), nla(1, bytes('0a5800'))]))).toBeUndefined();
    expect(parseAddress(Buffer.alloc(4))).toBeUndefined();
  });
});

// Payloads the kernel (Linux 6.18) sent to iproute2, read with `strace -e read=3 -xx` in a netns holding bridge br0
// (ifindex 2, MAC 02:00:00:00:00:b0) with port p0 (ifindex 4, MAC 02:00:00:00:00:10), whose veth peer q0 (ifindex 3)
// has MAC 86:48:fe:16:dc:26; then `bridge fdb add 0a:58:0a:58:09:05 dev p0 master static`,
// `ip neigh add 10.88.9.5 dev br0 lladdr 0a:58:0a:58:09:05 nud stale` and its IPv6 twin for fd00:88:9::5.
// Fields: ndmsg (family, pad, pad16, ifindex, state u16, flags, type), then NDA_* attributes.
const KERNEL = {
  /** `bridge fdb show`: 0a:58:0a:58:09:05 dev p0 master br0 static. */
  fdbStatic: bytes(
    '07 00 0000 04000000 4000 00 00' + // AF_BRIDGE, ifindex 4, NUD_NOARP, no flags
      '0a00 0200 0a580a580905 0000' + // NDA_LLADDR
      '0800 0900 02000000' + // NDA_MASTER 2
      '0800 0f00 00000000' + // NDA_FLAGS_EXT
      '1400 0300 00000000 8f030000 8f030000 00000000', // NDA_CACHEINFO
  ),
  /** `bridge fdb show`: 86:48:fe:16:dc:26 dev p0 master br0 (learned). */
  fdbLearned: bytes(
    '07000000 04000000 0200 00 00 0a000200 8648fe16dc26 0000 08000900 02000000 08000f00 00000000' +
      '14000300 00000000 7d040000 38020000 00000000',
  ),
  /** `bridge fdb show`: 33:33:00:00:00:01 dev br0 self permanent. */
  fdbSelf: bytes('07000000 02000000 8000 02 00 0a000200 333300000001 0000'),
  /** `ip -4 neigh show`: 10.88.9.5 dev br0 lladdr 0a:58:0a:58:09:05 STALE. */
  neighV4: bytes(
    '02 00 0000 02000000 0400 00 01' + // AF_INET, ifindex 2, NUD_STALE, RTN_UNICAST
      '0800 0100 0a580905' + // NDA_DST
      '0a00 0200 0a580a580905 0000' + // NDA_LLADDR
      '0800 0400 00000000' + // NDA_PROBES
      '1400 0300 041c0000 94040000 94040000 00000000',
  ),
  /** `ip -6 neigh show`: fd00:88:9::5 dev br0 lladdr 0a:58:0a:58:09:05 REACHABLE. */
  neighV6: bytes(
    '0a000000 02000000 0200 00 01 1400 0100 fd000088000900000000000000000005 0a000200 0a580a580905 0000' +
      '08000400 00000000 14000300 a7040000 a7040000 a7040000 01000000',
  ),
  /** `ip monitor neigh` after `ip neigh del 10.88.9.5 dev br0`: "Deleted 10.88.9.5 dev br0 FAILED". */
  deletedV4: bytes(
    '02000000 02000000 2000 00 01 08000100 0a580905 08000400 00000000 14000300 d81e0000 68070000 68070000 00000000',
  ),
};

describe('neighDumpPayload', () => {
  it('is a bare 12-byte ndmsg of the family, as iproute2 sends it', () => {
    // `bridge fdb show`, `ip -4 neigh show` and `ip -6 neigh show` sent exactly these (strace -e write=3).
    expect(neighDumpPayload(AF_BRIDGE).toString('hex')).toBe('070000000000000000000000');
    expect(neighDumpPayload(AF_INET).toString('hex')).toBe('020000000000000000000000');
    expect(neighDumpPayload(AF_INET6).toString('hex')).toBe('0a0000000000000000000000');
  });

  it('frames as RTM_GETNEIGH (30) with NLM_F_DUMP', () => {
    const frame = encodeMessage(RTM_GETNEIGH, NLM_F_REQUEST | NLM_F_DUMP, 7, neighDumpPayload(AF_BRIDGE));
    expect(frame.toString('hex')).toBe('1c0000001e00010307000000' + '00000000' + '070000000000000000000000');
  });

  it('names the message types and the neighbour group as the kernel numbers them', () => {
    expect([RTM_NEWNEIGH, RTM_DELNEIGH, RTM_GETNEIGH, RtnlGroup.Neigh]).toEqual([28, 29, 30, 3]);
  });
});

describe('the get payloads (Linux 5.0: one entry, not a dump)', () => {
  // What iproute2 sent in the netns above (strace -e write=3): `bridge fdb get 0a:58:0a:58:09:05 br br0`,
  // `ip neigh get 10.88.9.5 dev br0` and `ip -6 neigh get fd00:88:9::5 dev br0`.
  it('asks bridge 2 for the FDB entry of a MAC as iproute2 does: ndmsg, NDA_LLADDR, NDA_MASTER', () => {
    const mac = bytes('0a580a580905');
    expect(fdbGetPayload(2, mac).toString('hex')).toBe(
      '07000000 00000000 00000000 0a000200 0a580a580905 0000 08000900 02000000'.replace(/ /g, ''),
    );
  });

  it('asks link 2 for the neighbour entry of an address as iproute2 does: ndmsg of the link, NDA_DST', () => {
    expect(neighGetPayload(AF_INET, 2, bytes('0a580905')).toString('hex')).toBe(
      '02000000 02000000 00000000 08000100 0a580905'.replace(/ /g, ''),
    );
    expect(neighGetPayload(AF_INET6, 2, bytes('fd000088000900000000000000000005')).toString('hex')).toBe(
      '0a000000 02000000 00000000 14000100 fd000088000900000000000000000005'.replace(/ /g, ''),
    );
  });

  it('frames as RTM_GETNEIGH without NLM_F_DUMP: the kernel answers with one RTM_NEWNEIGH', () => {
    const frame = encodeMessage(RTM_GETNEIGH, NLM_F_REQUEST, 9, neighGetPayload(AF_INET, 2, bytes('0a580905')));
    expect(frame.subarray(0, 8).toString('hex')).toBe('240000001e000100');
  });
});

describe('parseNeigh', () => {
  it('decodes a static FDB entry: port, state, MAC, bridge; no VLAN', () => {
    expect(parseNeigh(KERNEL.fdbStatic)).toEqual({
      family: AF_BRIDGE,
      ifindex: 4,
      state: 0x40,
      flags: 0,
      lladdr: bytes('0a580a580905'),
      master: 2,
    });
  });

  it('decodes a learned FDB entry and a self entry (no NDA_MASTER)', () => {
    expect(parseNeigh(KERNEL.fdbLearned)).toMatchObject({ ifindex: 4, state: 0x02, flags: 0, master: 2 });
    expect(parseNeigh(KERNEL.fdbLearned)?.lladdr?.toString('hex')).toBe('8648fe16dc26');
    const self = parseNeigh(KERNEL.fdbSelf)!;
    expect([self.ifindex, self.state, self.flags, 'master' in self]).toEqual([2, 0x80, 0x02, false]);
  });

  it('decodes IPv4 and IPv6 neighbours: address, MAC, state', () => {
    expect(parseNeigh(KERNEL.neighV4)).toEqual({
      family: AF_INET,
      ifindex: 2,
      state: 0x04,
      flags: 0,
      dst: bytes('0a580905'),
      lladdr: bytes('0a580a580905'),
    });
    const v6 = parseNeigh(KERNEL.neighV6)!;
    expect([v6.family, v6.ifindex, v6.state, v6.dst?.toString('hex')]).toEqual([
      AF_INET6,
      2,
      0x02,
      'fd000088000900000000000000000005',
    ]);
  });

  it('leaves lladdr out of an entry that holds none (FAILED)', () => {
    const entry = parseNeigh(KERNEL.deletedV4)!;
    expect(entry.state).toBe(0x20);
    expect('lladdr' in entry).toBe(false);
  });

  it('reads NDA_VLAN (5) as a u16', () => {
    // The bridge FDB entry above, on VLAN 100: what a VLAN-filtering bridge adds (this kernel has none).
    const withVlan = Buffer.concat([KERNEL.fdbStatic, bytes('0600 0500 6400 0000')]);
    expect(parseNeigh(withVlan)?.vlan).toBe(100);
    expect(parseNeigh(Buffer.concat([KERNEL.fdbStatic, bytes('0500 0500 64 000000')]))).not.toHaveProperty('vlan');
  });

  it('copies the attributes out of the payload (a receive buffer is reused)', () => {
    const payload = Buffer.from(KERNEL.neighV4);
    const entry = parseNeigh(payload)!;
    payload.fill(0);
    expect([entry.dst?.toString('hex'), entry.lladdr?.toString('hex')]).toEqual(['0a580905', '0a580a580905']);
  });

  it('refuses a payload shorter than struct ndmsg', () => {
    expect(parseNeigh(KERNEL.neighV4.subarray(0, 11))).toBeUndefined();
    expect(parseNeigh(KERNEL.neighV4.subarray(0, 12))).toEqual({ family: 2, ifindex: 2, state: 4, flags: 0 });
  });

  it('reads the ifindex as signed and the state as u16', () => {
    const odd = bytes('02000000 ffffffff 0001 ff 00');
    expect(parseNeigh(odd)).toMatchObject({ ifindex: -1, state: 0x100, flags: 0xff });
  });
});

describe('parseNeighChange', () => {
  it('tells an added or changed entry from a removed one, and skips other messages', () => {
    const msg = (type: number, payload: Buffer) => ({ type, flags: 0, seq: 0, payload });
    expect(parseNeighChange(msg(RTM_NEWNEIGH, KERNEL.neighV4))).toMatchObject({ deleted: false, entry: { state: 4 } });
    expect(parseNeighChange(msg(RTM_DELNEIGH, KERNEL.deletedV4))).toMatchObject({
      deleted: true,
      entry: { state: 0x20 },
    });
    expect(parseNeighChange(msg(16, KERNEL.neighV4))).toBeUndefined(); // RTM_NEWLINK
    expect(parseNeighChange(msg(RTM_NEWNEIGH, Buffer.alloc(4)))).toBeUndefined();
  });
});

// Route messages against payloads this kernel sent for `ip route add default via 10.88.0.1 dev d0` (and the IPv6
// twin) in a netns where d0 is ifindex 3, read with a plain AF_NETLINK dump.
/** default via 10.88.0.1 dev d0 (main table, RTN_UNICAST). */
const V4_DEFAULT = bytes('02000000 fe030001 00000000 08000f00 fe000000 08000500 0a580001 08000400 03000000');
/** 10.88.0.0/24 dev d0 proto kernel scope link: no gateway. */
const V4_LINK = bytes(
  '02180000 fe02fd01 00000000 08000f00 fe000000 08000100 0a580000 08000700 0a580005 08000400 03000000',
);
/** local 10.88.0.5 dev d0 table local (RTN_LOCAL): not a unicast route. */
const V4_LOCAL = bytes(
  '02200000 ff02fe02 00000000 08000f00 ff000000 08000100 0a580005 08000700 0a580005 08000400 03000000',
);
/** default via fd00:88::1 dev d0 metric 1024 (with RTA_PRIORITY and RTA_CACHEINFO). */
const V6_DEFAULT = bytes(
  '0a000000 fe030001 00000000 08000f00 fe000000 08000600 00040000 14000500 fd000088 00000000 00000000 00000001' +
    '08000400 03000000 24000c00' +
    '00'.repeat(32) +
    '05001400 00000000',
);

describe('routeDumpPayload', () => {
  it('is an rtmsg of the family, all else zero (every table)', () => {
    expect(routeDumpPayload(2).toString('hex')).toBe('020000000000000000000000');
    expect(routeDumpPayload(10).toString('hex')).toBe('0a0000000000000000000000');
  });
});

describe('parseRoute', () => {
  it('reads the family, prefix length, table, out link and gateway of a default route', () => {
    expect(parseRoute(V4_DEFAULT)).toEqual({
      family: 2,
      dstLen: 0,
      table: 254,
      oif: 3,
      gateway: Buffer.from([10, 88, 0, 1]),
    });
    expect(parseRoute(V6_DEFAULT)).toEqual({
      family: 10,
      dstLen: 0,
      table: 254,
      oif: 3,
      gateway: bytes('fd000088000000000000000000000001'),
    });
  });

  it('gives a direct route without a gateway, and no entry for a local route or a short payload', () => {
    expect(parseRoute(V4_LINK)).toEqual({ family: 2, dstLen: 24, table: 254, oif: 3 });
    expect(parseRoute(V4_LOCAL)).toBeUndefined();
    expect(parseRoute(V4_DEFAULT.subarray(0, 11))).toBeUndefined();
  });

  it('leaves out a table, an out link or a gateway whose attribute has the wrong length', () => {
    // rtm_table 100; RTA_TABLE of 2 bytes, RTA_OIF of 2 bytes (each padded to 4), RTA_GATEWAY of 5 (padded to 8).
    const bad = bytes('02000000 64030001 00000000 06000f00 fe000000 06000400 03000000 09000500 0a58000101000000');
    expect(parseRoute(bad)).toStrictEqual({ family: 2, dstLen: 0, table: 100 });
  });

  it('takes RTA_TABLE over rtm_table (a table number over 255 has rtm_table RT_TABLE_COMPAT)', () => {
    const big = Buffer.from(V4_DEFAULT);
    big[4] = 252;
    big.writeUInt32LE(1000, 16);
    expect(parseRoute(big)?.table).toBe(1000);
    // An rtmsg alone: a unicast route without attributes.
    expect(parseRoute(V4_DEFAULT.subarray(0, 12))).toEqual({ family: 2, dstLen: 0, table: 254 });
  });

  it('takes the table from rtm_table when RTA_TABLE is absent', () => {
    const noTableAttr = Buffer.concat([V4_DEFAULT.subarray(0, 12), V4_DEFAULT.subarray(20)]);
    expect(parseRoute(noTableAttr)?.table).toBe(254);
    const other = Buffer.from(noTableAttr);
    other[4] = 100;
    expect(parseRoute(other)?.table).toBe(100);
  });
});
