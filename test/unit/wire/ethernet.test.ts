import { describe, it, expect } from 'vitest';
import { ETHERTYPE_ARP, ETHERTYPE_IPV6, ethernetFrame } from '../../../src/wire/ethernet';

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');
const MAC = bytes('02420a580005');
const BCAST = bytes('ffffffffffff');

describe('EtherType constants', () => {
  it('have the IEEE values', () => {
    expect(ETHERTYPE_ARP).toBe(0x0806);
    expect(ETHERTYPE_IPV6).toBe(0x86dd);
  });
});

describe('ethernetFrame', () => {
  it('lays out dst, src, type and payload with no padding', () => {
    const frame = ethernetFrame(BCAST, MAC, 0x0806, bytes('deadbeef'));
    expect(frame.toString('hex')).toBe(['ffffffffffff', '02420a580005', '0806', 'deadbeef'].join(''));
    expect(frame.length).toBe(18);
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

  it.each([0x05ff, 0x10000, -1, 1.5, Number.NaN])('rejects EtherType %s', (ethertype) => {
    expect(() => ethernetFrame(BCAST, MAC, ethertype, bytes(''))).toThrow(
      new RangeError(`invalid EtherType ${ethertype}: want an integer in 0x0600-0xffff`),
    );
  });
});
