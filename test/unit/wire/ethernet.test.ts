import { beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Ethernet from '../../../src/wire/ethernet';

// Each test loads the module afresh: its MAC patterns and shared MACs, made when it loads, are then the test's own
// (a mutation run activates a mutant only inside a test).
let { deriveMac, ethernetFrame, formatMac, isLocallyAdministeredMac, isMulticastMac, parseMac } = {} as typeof Ethernet;
let eth: typeof Ethernet;
beforeEach(async () => {
  vi.resetModules();
  eth = await import('../../../src/wire/ethernet');
  ({ deriveMac, ethernetFrame, formatMac, isLocallyAdministeredMac, isMulticastMac, parseMac } = eth);
});

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');

describe('parseMac', () => {
  it('parses colon, dash and mixed-case text', () => {
    expect(parseMac('02:42:0a:58:00:05').toString('hex')).toBe('02420a580005');
    expect(parseMac('02-42-0A-58-00-05').toString('hex')).toBe('02420a580005');
    expect(parseMac('Ff:fF:ff:FF:ff:ff').toString('hex')).toBe('ffffffffffff');
  });

  it('returns a fresh 6-byte buffer', () => {
    const a = parseMac('02:42:0a:58:00:05');
    const b = parseMac('02:42:0a:58:00:05');
    expect(a.length).toBe(6);
    a[0] = 0;
    expect(b[0]).toBe(0x02);
  });

  it.each([
    '',
    '02:42:0a:58:00',
    '02:42:0a:58:00:05:06',
    '02:42:0a-58:00:05',
    '2:42:0a:58:00:05',
    '002:42:0a:58:00:05',
    '02420a580005',
    '0242.0a58.0005',
    '02:42:0a:58:00:0g',
    '02:42:0a:58:00:05:',
    ' 02:42:0a:58:00:05',
    '02:42:0a:58:00:05\n',
  ])('rejects %j with a RangeError naming it', (text) => {
    expect(() => parseMac(text)).toThrow(RangeError);
    expect(() => parseMac(text)).toThrow(`invalid MAC address "${text}"`);
  });
});

describe('formatMac', () => {
  it('formats lowercase, colon separated, zero padded', () => {
    expect(formatMac(bytes('02420A580005'))).toBe('02:42:0a:58:00:05');
    expect(formatMac(new Uint8Array([0, 1, 2, 3, 4, 255]))).toBe('00:01:02:03:04:ff');
  });

  it('rejects a wrong length', () => {
    expect(() => formatMac(bytes('02420a5800'))).toThrow(
      new RangeError('MAC address must be 6 bytes, got 5 (02420a5800)'),
    );
  });
});

describe('MAC bits', () => {
  it('tests the group bit (0x01 of the first byte)', () => {
    expect(isMulticastMac(bytes('01005e000001'))).toBe(true);
    expect(isMulticastMac(bytes('333300000001'))).toBe(true);
    expect(isMulticastMac(bytes('ffffffffffff'))).toBe(true);
    expect(isMulticastMac(bytes('02420a580005'))).toBe(false);
    expect(isMulticastMac(bytes('fe0000000001'))).toBe(false);
  });

  it('tests the locally-administered bit (0x02 of the first byte)', () => {
    expect(isLocallyAdministeredMac(bytes('02420a580005'))).toBe(true);
    expect(isLocallyAdministeredMac(bytes('0a580a580005'))).toBe(true);
    expect(isLocallyAdministeredMac(bytes('001122334455'))).toBe(false);
    expect(isLocallyAdministeredMac(bytes('010000000000'))).toBe(false);
  });

  it('rejects a wrong length', () => {
    expect(() => isMulticastMac(new Uint8Array(0))).toThrow(
      new RangeError('MAC address must be 6 bytes, got 0 (empty)'),
    );
    expect(() => isLocallyAdministeredMac(new Uint8Array(7))).toThrow(
      new RangeError('MAC address must be 6 bytes, got 7 (00000000000000)'),
    );
  });
});

const PREFIX = '0a:58';

describe('deriveMac: the prefix', () => {
  const prefixOf = (text: string) => deriveMac(text, '10.88.0.5').subarray(0, 2);

  it('parses two hex pairs with either separator', () => {
    expect(prefixOf('0a:58').toString('hex')).toBe('0a58');
    expect(prefixOf('0A-58').toString('hex')).toBe('0a58');
  });

  it('accepts globally administered (non-local) unicast prefixes', () => {
    expect(prefixOf('00:11').toString('hex')).toBe('0011');
    expect(prefixOf('fe:ff').toString('hex')).toBe('feff');
  });

  it.each(['01:00', '0b:58', '33:33', 'ff:ff'])('rejects multicast prefix %s', (text) => {
    expect(() => deriveMac(text, '10.88.0.5')).toThrow(
      new RangeError(`invalid MAC prefix "${text}": the multicast bit (0x01 of the first byte) is set`),
    );
  });

  it.each(['', '0a', '0a58', '0a:5', '0a:58:00', 'a:58', '0a_58', 'zz:58', '0a:58 '])('rejects syntax %j', (text) => {
    expect(() => deriveMac(text, '10.88.0.5')).toThrow(
      new RangeError(`invalid MAC prefix "${text}": want two hex pairs such as "0a:58"`),
    );
  });
});

describe('deriveMac', () => {
  it('appends the IPv4 bytes (the README example: 10.88.0.5 → 0a:58:0a:58:00:05)', () => {
    expect(deriveMac(PREFIX, '10.88.0.5').toString('hex')).toBe('0a580a580005');
  });

  // printf 'fd00::5' | sha256sum -> 67cc136bdaa2389d...
  it('appends sha256 of the canonical IPv6 text', () => {
    expect(deriveMac(PREFIX, 'fd00::5').toString('hex')).toBe('0a5867cc136b');
  });

  it('hashes the canonical form, whatever the input spelling', () => {
    expect(deriveMac(PREFIX, 'FD00:0:0:0:0:0:0:0005').toString('hex')).toBe('0a5867cc136b');
    // printf '2001:db8::1' | sha256sum -> 5afd19e8...
    expect(deriveMac(PREFIX, '2001:0db8::0001').toString('hex')).toBe('0a585afd19e8');
  });

  it('treats IPv4-mapped IPv6 as IPv4, like Go ip.To4()', () => {
    expect(deriveMac(PREFIX, '::ffff:10.88.0.5').toString('hex')).toBe('0a580a580005');
  });

  it('rejects bad addresses', () => {
    expect(() => deriveMac(PREFIX, '10.88.0.5/24')).toThrow(RangeError);
    expect(() => deriveMac(PREFIX, 'fe80::1%eth0')).toThrow('zone ids are not supported');
    expect(() => deriveMac(PREFIX, '')).toThrow(RangeError);
  });
});

const MAC = bytes('02420a580005');
const BCAST = bytes('ffffffffffff');

describe('ethernetFrame', () => {
  it('lays out dst, src, type and payload with no padding', () => {
    const frame = ethernetFrame(BCAST, MAC, 0x0806, bytes('deadbeef'));
    expect(frame.toString('hex')).toBe(['ffffffffffff', '02420a580005', '0806', 'deadbeef'].join(''));
  });

  it('accepts an empty payload', () => {
    expect(ethernetFrame(BCAST, MAC, 0x86dd, new Uint8Array(0)).toString('hex')).toBe('ffffffffffff02420a58000586dd');
  });

  it('copies its inputs', () => {
    const dst = Buffer.from(BCAST);
    const frame = ethernetFrame(dst, MAC, 0x0806, bytes('00'));
    frame.fill(0);
    expect(dst.toString('hex')).toBe('ffffffffffff');
  });

  it('rejects bad MAC lengths', () => {
    expect(() => ethernetFrame(bytes('ffffffffff'), MAC, 0x0806, bytes(''))).toThrow(
      new RangeError('destination MAC must be 6 bytes, got 5 (ffffffffff)'),
    );
    expect(() => ethernetFrame(BCAST, bytes('02420a58000506'), 0x0806, bytes(''))).toThrow(
      new RangeError('source MAC must be 6 bytes, got 7 (02420a58000506)'),
    );
  });

  it('rejects a multicast source MAC', () => {
    expect(() => ethernetFrame(BCAST, bytes('333300000001'), 0x86dd, bytes(''))).toThrow(
      new RangeError('source MAC 33:33:00:00:00:01 is multicast'),
    );
  });
});

describe('the shared MACs', () => {
  it('are broadcast and the Ethernet group of ff02::1', () => {
    expect([eth.BROADCAST_MAC, eth.IPV6_ALL_NODES_MAC].map((mac) => eth.formatMac(mac))).toEqual([
      'ff:ff:ff:ff:ff:ff',
      '33:33:00:00:00:01',
    ]);
  });
});
