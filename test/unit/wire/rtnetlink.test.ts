import { describe, it, expect } from 'vitest';
import { parseAttrs as parseNestedAttrs } from '../../../src/wire/netlink';
import {
  addressDumpPayload,
  bridgePortDumpPayload,
  getLinkPayload,
  ipvlanMode,
  linkKind,
  parseAddress,
  parseLink,
  PortState,
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
  it('walks attributes and skips the padding to 4 bytes', () => {
    const buf = bytes(
      [
        '0900 0100', // len 9, type 1 (IFLA_INFO_KIND)
        '7665746800', // "veth\0"
        '000000', // padding to 12
        '0800 0300', // len 8, type 3
        '2a000000', // u32 42
      ].join(''),
    );
    expect(entries(parseNestedAttrs(buf))).toEqual([
      [1, '7665746800'],
      [3, '2a000000'],
    ]);
  });

  it('masks NLA_F_NESTED and NLA_F_NET_BYTEORDER out of the type', () => {
    const buf = bytes(
      [
        '0c00 0280', // len 12, type 0x8002: IFLA_INFO_DATA | NLA_F_NESTED
        '0600 0100 0100 0000', // nested: len 6, type 1, u16 1, padding
        '0800 0540', // len 8, type 0x4005: type 5 | NLA_F_NET_BYTEORDER
        '0a580005',
      ].join(''),
    );
    expect(entries(parseNestedAttrs(buf))).toEqual([
      [2, '0600010001000000'],
      [5, '0a580005'],
    ]);
  });

  it('accepts a last attribute without trailing padding', () => {
    const buf = bytes('0800 0100 01020304' + '0500 0200 ff');
    expect(entries(parseNestedAttrs(buf))).toEqual([
      [1, '01020304'],
      [2, 'ff'],
    ]);
  });

  it('keeps an empty payload', () => {
    expect(entries(parseNestedAttrs(bytes('0400 0700')))).toEqual([[7, '']]);
  });

  it('lets the last attribute of a type win', () => {
    const buf = bytes('0500 0100 01 000000' + '0500 0100 02 000000');
    expect(entries(parseNestedAttrs(buf))).toEqual([[1, '02']]);
  });

  it('stops at an attribute that runs past the end, keeping the ones before', () => {
    const buf = bytes('0800 0100 01020304' + '0c00 0200 aabbccdd'); // second claims 12 bytes, has 8
    expect(entries(parseNestedAttrs(buf))).toEqual([[1, '01020304']]);
  });

  it('stops at a length below the 4-byte header', () => {
    const buf = bytes('0800 0100 01020304' + '0200 0200 aabbccdd' + '0800 0300 05060708');
    expect(entries(parseNestedAttrs(buf))).toEqual([[1, '01020304']]);
  });

  it('ignores a trailing fragment shorter than a header', () => {
    expect(entries(parseNestedAttrs(bytes('0800 0100 01020304' + '0800 02')))).toEqual([[1, '01020304']]);
  });

  it('returns an empty map for an empty buffer', () => {
    expect(parseNestedAttrs(new Uint8Array(0)).size).toBe(0);
  });

  it('reads a view that starts inside a larger buffer', () => {
    const outer = bytes('deadbeef' + '0800 0100 01020304' + 'cafe');
    const view = new Uint8Array(outer.buffer, outer.byteOffset + 4, 8);
    expect(entries(parseNestedAttrs(view))).toEqual([[1, '01020304']]);
  });
});

describe('linkKind', () => {
  it('reads IFLA_INFO_KIND without its NUL terminator', () => {
    expect(linkKind(bytes('0900 0100 7665746800 000000'))).toBe('veth');
    expect(linkKind(nla(1, cstr('bridge')))).toBe('bridge');
  });

  it('reads a kind that has no NUL terminator', () => {
    expect(linkKind(nla(1, Buffer.from('macvlan', 'latin1')))).toBe('macvlan');
  });

  it('is undefined without linkinfo or without IFLA_INFO_KIND', () => {
    expect(linkKind(undefined)).toBeUndefined();
    expect(linkKind(nla(2 | NLA_F_NESTED, nla(1, u16(0))))).toBeUndefined();
  });
});

describe('ipvlanMode', () => {
  it('maps IFLA_IPVLAN_MODE 0, 1, 2 to l2, l3, l3s', () => {
    expect(ipvlanMode(ipvlanInfo(0))).toBe('l2');
    expect(ipvlanMode(ipvlanInfo(1))).toBe('l3');
    expect(ipvlanMode(ipvlanInfo(2))).toBe('l3s');
  });

  it('reads the hand-assembled l3s linkinfo', () => {
    const info = bytes(
      [
        '0b00 0100', // len 11, IFLA_INFO_KIND
        '6970766c616e00 00', // "ipvlan\0" + 1 padding
        '0c00 0280', // len 12, IFLA_INFO_DATA | NLA_F_NESTED
        '0600 0100 0200 0000', // IFLA_IPVLAN_MODE = 2 (l3s), padding
      ].join(''),
    );
    expect(ipvlanMode(info)).toBe('l3s');
  });

  it("defaults to l3 (the kernel's default) when the mode is absent", () => {
    expect(ipvlanMode(nla(1, cstr('ipvlan')))).toBe('l3');
    expect(ipvlanMode(Buffer.concat([nla(1, cstr('ipvlan')), nla(2 | NLA_F_NESTED, nla(2, u16(1)))]))).toBe('l3');
  });

  it('is undefined for links that are not ipvlan', () => {
    const macvlan = Buffer.concat([nla(1, cstr('macvlan')), nla(2 | NLA_F_NESTED, nla(1, u16(0)))]);
    expect(ipvlanMode(macvlan)).toBeUndefined();
    expect(ipvlanMode(nla(1, cstr('veth')))).toBeUndefined();
    expect(ipvlanMode(undefined)).toBeUndefined();
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
  it('asks for one link by index, without statistics', () => {
    expect(getLinkPayload({ index: 7 }).toString('hex')).toBe(
      [
        '00 00 0000 07000000 00000000 00000000', // ifinfomsg: AF_UNSPEC, index 7
        '0800 1d00 08000000', // IFLA_EXT_MASK (29) = RTEXT_FILTER_SKIP_STATS
      ]
        .join('')
        .replace(/\s/g, ''),
    );
  });

  it('asks for one link by name: index 0 and IFLA_IFNAME with its NUL', () => {
    expect(getLinkPayload({ name: 'eth0' }).toString('hex')).toBe(
      [
        '00 00 0000 00000000 00000000 00000000',
        '0900 0300 6574683000 000000', // IFLA_IFNAME (3) "eth0\0", padded to 12
        '0800 1d00 08000000',
      ]
        .join('')
        .replace(/\s/g, ''),
    );
  });

  it('dumps bridge ports as AF_BRIDGE (7) and addresses as AF_UNSPEC', () => {
    expect(bridgePortDumpPayload().toString('hex')).toBe('07000000000000000000000000000000');
    expect(addressDumpPayload().toString('hex')).toBe('0000000000000000');
  });

  it('sets a MAC with IFLA_ADDRESS (1)', () => {
    expect(setMacPayload(3, bytes('0a580a580005')).toString('hex')).toBe(
      ['00 00 0000 03000000 00000000 00000000', '0a00 0100 0a580a580005 0000'].join('').replace(/\s/g, ''),
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
    expect(parseAddress(Buffer.concat([ifaddrmsg(2, 24, 0, 4), nla(1, bytes('0a5800'))]))).toBeUndefined();
    expect(parseAddress(Buffer.alloc(4))).toBeUndefined();
  });
});
