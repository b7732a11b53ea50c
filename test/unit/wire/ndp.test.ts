import { describe, it, expect } from 'vitest';
import { unsolicitedNeighborAdvert } from '../../../src/wire/ndp';

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');
const MAC = bytes('02420a580005'); // 02:42:0a:58:00:05
const IP = bytes('fd000088000000000000000000000005'); // fd00:88::5

/**
 * Hand-assembled from RFC 4861 §4.4 and RFC 8200 §8.1. Each checksum was summed by hand and then
 * confirmed by writing the frame to a pcap and decoding it with `tshark -V` ("[Checksum Status: Good]").
 */
function na(src: string, mac: string, checksum: string, flags: string): string {
  return [
    '333300000001', // eth dst: ff02::1 group
    mac, // eth src
    '86dd', // ethertype IPv6
    '60000000', // version 6, traffic class 0, flow label 0
    '0020', // payload length 32
    '3a', // next header ICMPv6
    'ff', // hop limit 255
    src, // source = target address
    'ff020000000000000000000000000001', // destination ff02::1
    '88', // type 136
    '00', // code
    checksum,
    flags, // R S O bits
    '000000', // reserved
    src, // target address
    '02', // option: target link-layer address
    '01', // length 1 (8 bytes)
    mac,
  ].join('');
}

describe('unsolicitedNeighborAdvert', () => {
  it('builds the 86-byte NA with O=1 (checksum 0x4ee5)', () => {
    const frame = unsolicitedNeighborAdvert({ mac: MAC, ip: IP, router: false, override: true });
    expect(frame.length).toBe(86);
    expect(frame.toString('hex')).toBe(na('fd000088000000000000000000000005', '02420a580005', '4ee5', '20'));
  });

  it('sets R and O (checksum 0xcee4)', () => {
    const frame = unsolicitedNeighborAdvert({ mac: MAC, ip: IP, router: true, override: true });
    expect(frame.toString('hex')).toBe(na('fd000088000000000000000000000005', '02420a580005', 'cee4', 'a0'));
  });

  it('clears all flags (checksum 0x6ee5)', () => {
    const frame = unsolicitedNeighborAdvert({ mac: MAC, ip: IP, router: false, override: false });
    expect(frame.toString('hex')).toBe(na('fd000088000000000000000000000005', '02420a580005', '6ee5', '00'));
  });

  it('sets R alone (0x80) and never S (0x40)', () => {
    const frame = unsolicitedNeighborAdvert({ mac: MAC, ip: IP, router: true, override: false });
    expect(frame[14 + 40 + 4]).toBe(0x80);
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

  it('rejects bad lengths', () => {
    expect(() => unsolicitedNeighborAdvert({ mac: MAC, ip: bytes('0a580005'), router: false, override: true })).toThrow(
      new RangeError('NA target IPv6 address must be 16 bytes, got 4 (0a580005)'),
    );
    expect(() => unsolicitedNeighborAdvert({ mac: bytes('0242'), ip: IP, router: false, override: true })).toThrow(
      new RangeError('NA link-layer address must be 6 bytes, got 2 (0242)'),
    );
  });

  it('rejects multicast and unspecified targets', () => {
    expect(() =>
      unsolicitedNeighborAdvert({
        mac: MAC,
        ip: bytes('ff020000000000000000000000000001'),
        router: false,
        override: true,
      }),
    ).toThrow(new RangeError('NA target ff02::1 must be a unicast address'));
    expect(() =>
      unsolicitedNeighborAdvert({ mac: MAC, ip: new Uint8Array(16), router: false, override: true }),
    ).toThrow(new RangeError('NA target :: must be a unicast address'));
  });
});
