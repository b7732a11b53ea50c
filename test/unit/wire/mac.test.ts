import { describe, it, expect } from 'vitest';
import {
  BROADCAST_MAC,
  IPV6_ALL_NODES_MAC,
  formatMac,
  isLocallyAdministeredMac,
  isMulticastMac,
  parseMac,
} from '../../../src/wire/mac';

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
    expect(() => isMulticastMac(new Uint8Array(0))).toThrow(RangeError);
    expect(() => isLocallyAdministeredMac(new Uint8Array(7))).toThrow(RangeError);
  });
});

describe('MAC constants', () => {
  it('hold the broadcast and all-nodes groups', () => {
    expect(BROADCAST_MAC.toString('hex')).toBe('ffffffffffff');
    expect(IPV6_ALL_NODES_MAC.toString('hex')).toBe('333300000001');
  });
});
