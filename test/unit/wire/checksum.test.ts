import { describe, it, expect } from 'vitest';
import { internetChecksum } from '../../../src/wire/checksum';

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');

describe('internetChecksum', () => {
  it('matches the RFC 1071 §3 example (sum 0xddf2)', () => {
    expect(internetChecksum(bytes('0001 f203 f4f5 f6f7'))).toBe(0x220d);
  });

  it('matches a textbook IPv4 header checksum', () => {
    // 45 00 00 73 00 00 40 00 40 11 [b8 61] c0 a8 00 01 c0 a8 00 c7
    expect(internetChecksum(bytes('4500 0073 0000 4000 4011 0000 c0a8 0001 c0a8 00c7'))).toBe(0xb861);
  });

  it('is zero over data that already carries its checksum', () => {
    expect(internetChecksum(bytes('4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7'))).toBe(0x0000);
  });

  it('treats parts as one byte stream across odd boundaries', () => {
    expect(internetChecksum(bytes('0001f2'), bytes('03f4'), bytes('f5f6f7'))).toBe(0x220d);
    // stream 01 02 03 -> words 0102 + 0300 = 0402 -> 0xfbfd (padding each part would give 0xfcfc)
    expect(internetChecksum(bytes('01'), bytes('0203'))).toBe(0xfbfd);
  });

  it('pads an odd tail with a zero byte', () => {
    expect(internetChecksum(bytes('01'))).toBe(0xfeff);
    // 0001 + f203 + f4f5 + f600 = 2dcf9 -> dcfb -> 0x2304
    expect(internetChecksum(bytes('0001 f203 f4f5 f6'))).toBe(0x2304);
  });

  it('folds end-around carries', () => {
    expect(internetChecksum(bytes('ffff ffff'))).toBe(0x0000);
    // 500 words of ffff add nothing in one's complement; the tail ff00 remains.
    expect(internetChecksum(Buffer.alloc(1001, 0xff))).toBe(0x00ff);
  });

  it('gives 0xffff for no data', () => {
    expect(internetChecksum()).toBe(0xffff);
    expect(internetChecksum(new Uint8Array(0), new Uint8Array(0))).toBe(0xffff);
  });
});
