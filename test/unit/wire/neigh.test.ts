import { describe, expect, it } from 'vitest';
import {
  fdbGetPayload,
  neighDumpPayload,
  neighGetPayload,
  parseNeigh,
  parseNeighChange,
  RTM_DELNEIGH,
  RTM_GETNEIGH,
  RTM_NEWNEIGH,
} from '../../../src/wire/neigh';
import { encodeMessage, NLM_F_DUMP, NLM_F_REQUEST } from '../../../src/wire/netlink';
import { AF_BRIDGE, AF_INET, AF_INET6, RtnlGroup } from '../../../src/wire/rtnetlink';

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');

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
    expect([self.ifindex, self.state, self.flags, self.master]).toEqual([2, 0x80, 0x02, undefined]);
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
