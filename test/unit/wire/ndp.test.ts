import { beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Ndp from '../../../src/wire/ndp';

// Each test loads the module afresh: its constants (the all-nodes address), made when it loads, are then the test's
// own (a mutation run activates a mutant only inside a test).
let { internetChecksum, neighborSolicitation, parseNeighborAdvert, unsolicitedNeighborAdvert } = {} as typeof Ndp;
beforeEach(async () => {
  vi.resetModules();
  ({ internetChecksum, neighborSolicitation, parseNeighborAdvert, unsolicitedNeighborAdvert } = await import(
    '../../../src/wire/ndp'
  ));
});

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');
const MAC = bytes('02420a580005'); // 02:42:0a:58:00:05
const IP = bytes('fd000088000000000000000000000005'); // fd00:88::5

/**
 * Hand-assembled from RFC 4861 §4.4 and RFC 8200 §8.1. Each checksum was summed by hand and then
 * confirmed by writing the frame to a pcap and decoding it with `tshark -V` ("[Checksum Status: Good]").
 */
function na(src: string, mac: string, checksum: string, flags: string): string {
  return [
    `333300000001 ${mac} 86dd`, // Ethernet: to the ff02::1 group, from the MAC, IPv6
    `60000000 0020 3a ff ${src} ff020000000000000000000000000001`, // version 6, payload 32, ICMPv6, hop limit 255
    `88 00 ${checksum} ${flags}000000 ${src}`, // type 136, code 0, checksum, R S O flags, reserved, target = source
    `02 01 ${mac}`, // option: target link-layer address, length 1 (8 bytes)
  ]
    .join('')
    .replace(/ /g, '');
}

describe('unsolicitedNeighborAdvert', () => {
  const FD = 'fd000088000000000000000000000005';
  it.each([
    ['O=1', '4ee5', false, true, '20'],
    ['R and O', 'cee4', true, true, 'a0'],
    ['no flag', '6ee5', false, false, '00'],
    ['R alone, never S (0x40)', 'eee4', true, false, '80'],
  ])('builds the 86-byte NA with %s (checksum 0x%s)', (_flags, checksum, router, override, flags) => {
    const frame = unsolicitedNeighborAdvert({ mac: MAC, ip: IP, router, override });
    expect(frame.toString('hex')).toBe(na(FD, '02420a580005', checksum, flags));
  });

  it('builds a link-local NA whose checksum needs a multi-carry fold (0xd40c)', () => {
    const frame = unsolicitedNeighborAdvert({
      mac: bytes('0a5867cc136b'),
      ip: bytes('fe800000000000000000000000000001'),
      router: false,
      override: true,
    });
    expect(frame.toString('hex')).toBe(na('fe800000000000000000000000000001', '0a5867cc136b', 'd40c', '20'));
  });

  it.each([
    ['a short target', bytes('0a580005'), MAC, 'NA target IPv6 address must be 16 bytes, got 4 (0a580005)'],
    ['a short MAC', IP, bytes('0242'), 'NA link-layer address must be 6 bytes, got 2 (0242)'],
    [
      'a multicast target',
      bytes('ff020000000000000000000000000001'),
      MAC,
      'NA target ff02::1 must be a unicast address',
    ],
    ['the unspecified target', new Uint8Array(16), MAC, 'NA target :: must be a unicast address'],
  ])('rejects %s', (_what, ip, mac, message) => {
    expect(() => unsolicitedNeighborAdvert({ mac, ip, router: false, override: true })).toThrow(
      new RangeError(message),
    );
  });
});

/**
 * Hand-assembled from RFC 4861 §4.3 and RFC 4291 §2.7.1; each checksum was summed by a separate script and confirmed by
 * `tshark -V` ("[Checksum Status: Good]", "Neighbor Solicitation for fd00:88::1 from 02:42:0a:58:00:05").
 */
function ns(f: { src: string; target: string; mac: string; checksum: string }): string {
  const low24 = f.target.slice(26);
  return [
    `3333ff${low24} ${f.mac} 86dd`, // Ethernet: to the solicited-node group's Ethernet group, from the MAC, IPv6
    `60000000 0020 3a ff ${f.src}`, // version 6, payload 32, ICMPv6, hop limit 255, from the pod's address
    `ff0200000000000000000001ff${low24}`, // to ff02::1:ff00:0/104 + the target's low 24 bits
    `87 00 ${f.checksum} 00000000 ${f.target}`, // type 135, code 0, checksum, reserved, target: the gateway
    `01 01 ${f.mac}`, // option: source link-layer address, length 1 (8 bytes)
  ]
    .join('')
    .replace(/ /g, '');
}

describe('neighborSolicitation', () => {
  const GATEWAY = bytes('fd000088000000000000000000000001'); // fd00:88::1

  it('builds the 86-byte NS to the solicited-node group with the source link-layer option (checksum 0x71e7)', () => {
    const frame = neighborSolicitation({ mac: MAC, ip: IP, target: GATEWAY });
    expect(frame.toString('hex')).toBe(
      ns({
        src: 'fd000088000000000000000000000005',
        target: 'fd000088000000000000000000000001',
        mac: '02420a580005',
        checksum: '71e7',
      }),
    );
  });

  it('builds a link-local NS for a link-local router, the group from its low 24 bits (checksum 0xd748)', () => {
    const frame = neighborSolicitation({
      mac: bytes('0a5867cc136b'),
      ip: bytes('fe80000000000000085867fffecc136b'),
      target: bytes('fe800000000000000000000000abcdef'),
    });
    expect(frame.toString('hex')).toBe(
      ns({
        src: 'fe80000000000000085867fffecc136b',
        target: 'fe800000000000000000000000abcdef',
        mac: '0a5867cc136b',
        checksum: 'd748',
      }),
    );
  });

  const ALL_NODES = bytes('ff020000000000000000000000000001');
  const UNSPECIFIED = new Uint8Array(16);
  it.each([
    ['a short MAC', bytes('0242'), IP, GATEWAY, 'NS link-layer address must be 6 bytes, got 2 (0242)'],
    ['a short source', MAC, bytes('0a580005'), GATEWAY, 'NS source IPv6 address must be 16 bytes, got 4 (0a580005)'],
    ['a short target', MAC, IP, bytes('0a580001'), 'NS target IPv6 address must be 16 bytes, got 4 (0a580001)'],
    ['an unspecified source', MAC, UNSPECIFIED, GATEWAY, 'NS source :: must be a unicast address'],
    ['a multicast source', MAC, ALL_NODES, GATEWAY, 'NS source ff02::1 must be a unicast address'],
    ['a multicast target', MAC, IP, ALL_NODES, 'NS target ff02::1 must be a unicast address'],
    ['an unspecified target', MAC, IP, UNSPECIFIED, 'NS target :: must be a unicast address'],
  ])('rejects %s', (_what, mac, ip, target, message) => {
    expect(() => neighborSolicitation({ mac, ip, target })).toThrow(new RangeError(message));
  });

  it('rejects a multicast source MAC', () => {
    expect(() => neighborSolicitation({ mac: bytes('333300000001'), ip: IP, target: GATEWAY })).toThrow(RangeError);
  });
});

describe('parseNeighborAdvert', () => {
  /**
   * The gateway fd00:88::1 at 52:54:00:12:34:56 answering the NS above, unicast, flags R S O, with a target link-layer
   * option; checksum by a separate script, tshark: "Neighbor Advertisement fd00:88::1 (rtr, sol, ovr) is at
   * 52:54:00:12:34:56", "[Checksum Status: Good]".
   */
  const ANSWER = [
    '02420a580005 525400123456 86dd', // Ethernet: to the pod, from the gateway, IPv6
    '60000000 0020 3a ff', // version 6, payload length 32, next header ICMPv6, hop limit 255
    'fd000088000000000000000000000001 fd000088000000000000000000000005', // from fd00:88::1 to fd00:88::5
    '88 00 1645 e0000000', // type 136, code 0, checksum, R S O + reserved
    'fd000088000000000000000000000001 0201525400123456', // target fd00:88::1, target link-layer address option
  ]
    .join('')
    .replace(/ /g, '');
  /** As ANSWER, flags S only, without options (checksum 0x3f0b, tshark: "(sol)"). */
  const BARE = ANSWER.replace('00203aff', '00183aff')
    .replace('1645e0000000', '3f0b40000000')
    .replace(/0201525400123456$/, '');
  /**
   * From 52:54:00:00:00:aa, source fe80::1, flags S O, a nonce option before the target link-layer option (checksum
   * 0x3bc6, tshark: "(sol, ovr) is at 52:54:00:12:34:56").
   */
  const WITH_NONCE = ANSWER.replace('525400123456', '5254000000aa')
    .replace('00203aff', '00283aff')
    .replace('3afffd000088000000000000000000000001', '3afffe800000000000000000000000000001')
    .replace('1645e0000000', '3bc660000000')
    .replace(/0201525400123456$/, '0e01a1b2c3d4e5f60201525400123456');

  const view = (hex: string) => {
    const na = parseNeighborAdvert(bytes(hex));
    return (
      na && {
        ethSource: na.ethSource.toString('hex'),
        source: na.source.toString('hex'),
        target: na.target.toString('hex'),
        targetMac: na.targetMac?.toString('hex'),
        flags: [na.router, na.solicited, na.override],
      }
    );
  };

  it('reads every field of a solicited NA with the target link-layer option', () => {
    expect(view(ANSWER)).toEqual({
      ethSource: '525400123456',
      source: 'fd000088000000000000000000000001',
      target: 'fd000088000000000000000000000001',
      targetMac: '525400123456',
      flags: [true, true, true],
    });
  });

  it('reads an NA without options: no targetMac, each flag on its own bit', () => {
    const na = parseNeighborAdvert(bytes(BARE))!;
    expect('targetMac' in na).toBe(false);
    expect([na.router, na.solicited, na.override]).toEqual([false, true, false]);
    const routerOnly = parseNeighborAdvert(bytes(BARE.replace('3f0b40000000', '3f0b80000000')))!;
    expect([routerOnly.router, routerOnly.solicited, routerOnly.override]).toEqual([true, false, false]);
    const overrideOnly = parseNeighborAdvert(bytes(BARE.replace('3f0b40000000', '3f0b20000000')))!;
    expect([overrideOnly.router, overrideOnly.solicited, overrideOnly.override]).toEqual([false, false, true]);
  });

  it('finds the target link-layer option after another option', () => {
    expect(view(WITH_NONCE)).toEqual({
      ethSource: '5254000000aa',
      source: 'fe800000000000000000000000000001',
      target: 'fd000088000000000000000000000001',
      targetMac: '525400123456',
      flags: [false, true, true],
    });
  });

  it('ignores a source link-layer option (type 1) and Ethernet padding after the message', () => {
    const withSource = ANSWER.replace(/0201525400123456$/, '0101525400123456');
    expect(view(withSource)?.targetMac).toBeUndefined();
    expect(view(`${BARE}${'00'.repeat(8)}`)?.targetMac).toBeUndefined();
    expect(view(`${ANSWER}${'02'.repeat(4)}`)?.targetMac).toBe('525400123456');
  });

  it('takes no MAC from a target link-layer option of another length than an Ethernet address', () => {
    const long = ANSWER.replace('00203aff', '00283aff').replace(
      /0201525400123456$/,
      '02025254001234560000000000000000',
    );
    expect(view(long)).toMatchObject({ target: 'fd000088000000000000000000000001', targetMac: undefined });
  });

  it('reads the unsolicited NAs it builds', () => {
    const na = parseNeighborAdvert(unsolicitedNeighborAdvert({ mac: MAC, ip: IP, router: false, override: true }))!;
    expect([na.target.toString('hex'), na.targetMac?.toString('hex'), na.solicited, na.override]).toEqual([
      'fd000088000000000000000000000005',
      '02420a580005',
      false,
      true,
    ]);
  });

  it('returns copies, and reads a frame inside a larger buffer', () => {
    const big = Buffer.concat([bytes('aabbcc'), bytes(ANSWER)]);
    const na = parseNeighborAdvert(big.subarray(3))!;
    big.fill(0);
    expect([na.ethSource, na.source, na.target, na.targetMac!].map((b) => b.toString('hex'))).toEqual([
      '525400123456',
      'fd000088000000000000000000000001',
      'fd000088000000000000000000000001',
      '525400123456',
    ]);
  });

  it.each([
    ['a short frame', ANSWER.slice(0, 2 * (14 + 40 + 23))],
    ['another ethertype', ANSWER.replace('86dd', '0800')],
    ['another IP version', ANSWER.replace('86dd6000', '86dd4000')],
    ['an extension header (hop-by-hop) before ICMPv6', ANSWER.replace('00203aff', '002000ff')],
    ['another next header', ANSWER.replace('00203aff', '002011ff')],
    ['a hop limit below 255 (forwarded)', ANSWER.replace('00203aff', '00203a40')],
    ['a Neighbor Solicitation', ANSWER.replace('88001645', '87001645')],
    ['a Router Advertisement', ANSWER.replace('88001645', '86001645')],
    ['a nonzero code', ANSWER.replace('88001645', '88011645')],
    ['a payload length below 24', BARE.replace('00183aff', '00173aff')],
    ['a payload length past the frame', ANSWER.replace('00203aff', '00283aff')],
    ['an option of length 0', ANSWER.replace(/0201525400123456$/, '0200525400123456')],
    ['an option running past the message', ANSWER.replace(/0201525400123456$/, '0202525400123456')],
    ['a lone byte of option', `${BARE.replace('00183aff', '00193aff')}02`],
  ])('ignores %s', (_, hex) => {
    expect(parseNeighborAdvert(bytes(hex))).toBeUndefined();
  });

  it('does not take an NS for an NA', () => {
    const target = bytes('fd000088000000000000000000000001');
    expect(parseNeighborAdvert(neighborSolicitation({ mac: MAC, ip: IP, target }))).toBeUndefined();
  });
});

describe('internetChecksum', () => {
  it.each([
    ['matches the RFC 1071 §3 example (sum 0xddf2)', ['0001 f203 f4f5 f6f7'], 0x220d],
    // 45 00 00 73 00 00 40 00 40 11 [b8 61] c0 a8 00 01 c0 a8 00 c7
    ['matches a textbook IPv4 header checksum', ['4500 0073 0000 4000 4011 0000 c0a8 0001 c0a8 00c7'], 0xb861],
    ['is zero over data that already carries its checksum', ['4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7'], 0],
    ['treats parts as one byte stream across odd boundaries', ['0001f2', '03f4', 'f5f6f7'], 0x220d],
    // stream 01 02 03 -> words 0102 + 0300 = 0402 -> 0xfbfd (padding each part would give 0xfcfc)
    ['treats parts as one byte stream: no padding between parts', ['01', '0203'], 0xfbfd],
    ['pads an odd tail with a zero byte', ['01'], 0xfeff],
    // 0001 + f203 + f4f5 + f600 = 2dcf9 -> dcfb -> 0x2304
    ['pads an odd tail with a zero byte, after a carry', ['0001 f203 f4f5 f6'], 0x2304],
    ['folds end-around carries', ['ffff ffff'], 0],
    // 500 words of ffff add nothing in one's complement; the tail ff00 remains.
    ['folds end-around carries over 1001 bytes', ['ff'.repeat(1001)], 0x00ff],
    ['gives 0xffff for no data', [], 0xffff],
    ['gives 0xffff for empty parts', ['', ''], 0xffff],
  ])('%s', (_what, parts, sum) => {
    expect(internetChecksum(...parts.map(bytes))).toBe(sum);
  });
});
