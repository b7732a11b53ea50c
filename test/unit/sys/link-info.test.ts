import { describe, it, expect } from 'vitest';
import { bridgePortState, ipvlanMode, linkKind, parseNestedAttrs, PortState } from '../../../src/sys/link-info';

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');
const entries = (m: Map<number, Buffer>): [number, string][] => [...m].map(([type, payload]) => [type, payload.toString('hex')]);

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

describe('bridgePortState', () => {
  it('reads IFLA_BRPORT_STATE (attribute 1) from protinfo', () => {
    const protinfo = new Map<number, Buffer>([
      [2, bytes('20000000')], // IFLA_BRPORT_PRIORITY
      [1, bytes('03')],
    ]);
    expect(bridgePortState(protinfo)).toBe(PortState.Forwarding);
    expect(bridgePortState(new Map([[1, bytes('01')]]))).toBe(PortState.Listening);
  });

  it('is undefined without protinfo, without the state, or with an empty payload', () => {
    expect(bridgePortState(undefined)).toBeUndefined();
    expect(bridgePortState(new Map([[2, bytes('20000000')]]))).toBeUndefined();
    expect(bridgePortState(new Map([[1, Buffer.alloc(0)]]))).toBeUndefined();
  });

  it('numbers the states as BR_STATE_* does', () => {
    expect(PortState).toEqual({ Disabled: 0, Listening: 1, Learning: 2, Forwarding: 3, Blocking: 4 });
  });
});
