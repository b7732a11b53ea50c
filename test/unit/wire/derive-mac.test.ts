import { describe, it, expect } from 'vitest';
import { deriveMac, parseMacPrefix } from '../../../src/wire/derive-mac';

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');
const PREFIX = bytes('0a58');

describe('parseMacPrefix', () => {
  it('parses two hex pairs with either separator', () => {
    expect(parseMacPrefix('0a:58').toString('hex')).toBe('0a58');
    expect(parseMacPrefix('0A-58').toString('hex')).toBe('0a58');
  });

  it('accepts globally administered (non-local) unicast prefixes', () => {
    expect(parseMacPrefix('00:11').toString('hex')).toBe('0011');
    expect(parseMacPrefix('fe:ff').toString('hex')).toBe('feff');
  });

  it.each(['01:00', '0b:58', '33:33', 'ff:ff'])('rejects multicast prefix %s', (text) => {
    expect(() => parseMacPrefix(text)).toThrow(
      new RangeError(`invalid MAC prefix "${text}": the multicast bit (0x01 of the first byte) is set`),
    );
  });

  it.each(['', '0a', '0a58', '0a:5', '0a:58:00', 'a:58', '0a_58', 'zz:58', '0a:58 '])('rejects syntax %j', (text) => {
    expect(() => parseMacPrefix(text)).toThrow(
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

  it('uses any unicast prefix', () => {
    expect(deriveMac(bytes('0011'), '10.88.0.5').toString('hex')).toBe('00110a580005');
  });

  it('rejects bad prefixes', () => {
    expect(() => deriveMac(bytes('0a5800'), '10.88.0.5')).toThrow(
      new RangeError('MAC prefix must be 2 bytes, got 3 (0a5800)'),
    );
    expect(() => deriveMac(bytes('0158'), '10.88.0.5')).toThrow(
      new RangeError('invalid MAC prefix "01:58": the multicast bit (0x01 of the first byte) is set'),
    );
  });

  it('rejects bad addresses', () => {
    expect(() => deriveMac(PREFIX, '10.88.0.5/24')).toThrow(RangeError);
    expect(() => deriveMac(PREFIX, 'fe80::1%eth0')).toThrow('zone ids are not supported');
    expect(() => deriveMac(PREFIX, '')).toThrow(RangeError);
  });

  it('returns a fresh buffer', () => {
    const prefix = Buffer.from(PREFIX);
    deriveMac(prefix, '10.88.0.5').fill(0);
    expect(prefix.toString('hex')).toBe('0a58');
  });
});
