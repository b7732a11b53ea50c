import { beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Ip from '../../../src/wire/ip';

// Each test loads the module afresh: its patterns, made when it loads, are then the test's own (a mutation run
// activates a mutant only inside a test).
let { canonicalIP, formatIPv6, ipFamily, isIPv4Mapped, isIPv6LinkLocal, parseIP, parseCidr, parseIPv4, parseIPv6 } =
  {} as typeof Ip;
beforeEach(async () => {
  vi.resetModules();
  ({ canonicalIP, formatIPv6, ipFamily, isIPv4Mapped, isIPv6LinkLocal, parseIP, parseCidr, parseIPv4, parseIPv6 } =
    await import('../../../src/wire/ip'));
});

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');

describe('parseIPv4', () => {
  it.each([
    ['10.88.0.5', '0a580005'],
    ['0.0.0.0', '00000000'],
    ['255.255.255.255', 'ffffffff'],
    ['192.0.2.33', 'c0000221'],
  ])('parses %s', (text, hex) => {
    expect(parseIPv4(text).toString('hex')).toBe(hex);
  });

  it.each([
    '',
    '10.88.0',
    '10.88.0.5.1',
    '256.0.0.1',
    '10.088.0.5',
    '10.88.0.05',
    '1..2.3',
    '+1.2.3.4',
    '0x1.2.3.4',
    '1.2.3.-4',
    '1.2.3.4 ',
    '1.2.3.4/32',
    '::1',
  ])('rejects %j', (text) => {
    expect(() => parseIPv4(text)).toThrow(new RangeError(`invalid IPv4 address "${text}"`));
  });
});

describe('parseIPv6', () => {
  it.each([
    ['fd00:88::5', 'fd000088 00000000 00000000 00000005'],
    ['FD00:0088:0000:0000:0000:0000:0000:0005', 'fd000088 00000000 00000000 00000005'],
    ['::', '00000000 00000000 00000000 00000000'],
    ['::1', '00000000 00000000 00000000 00000001'],
    ['1::', '00010000 00000000 00000000 00000000'],
    ['fe80::1', 'fe800000 00000000 00000000 00000001'],
    ['1:2:3:4:5:6::8', '00010002 00030004 00050006 00000008'],
    ['::2:3:4:5:6:7:8', '00000002 00030004 00050006 00070008'],
    ['::ffff:1.2.3.4', '00000000 00000000 0000ffff 01020304'],
    ['64:ff9b::192.0.2.33', '0064ff9b 00000000 00000000 c0000221'],
    ['1:2:3:4:5:6:10.88.0.5', '00010002 00030004 00050006 0a580005'],
    ['ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255', 'ffffffff ffffffff ffffffff ffffffff'],
  ])('parses %s', (text, hex) => {
    expect(parseIPv6(text).toString('hex')).toBe(hex.replace(/\s/g, ''));
  });

  it.each([
    '',
    ':',
    ':::',
    '1::2::3',
    ':1::2',
    '1::2:',
    '1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7::8',
    '1:2:3:4::5:6:7:8',
    '12345::',
    'g::1',
    '1.2.3.4',
    '::1.2.3',
    '::1.2.3.4:5',
    '::256.0.0.1',
    '1.2.3.4::',
    '1:2:3:4:5:6:7:1.2.3.4',
    ' ::1',
    '::1 ',
    'fd00::5/64',
  ])('rejects %j', (text) => {
    expect(() => parseIPv6(text)).toThrow(new RangeError(`invalid IPv6 address "${text}"`));
  });

  it('rejects zone ids with a specific message', () => {
    expect(() => parseIPv6('fe80::1%eth0')).toThrow(
      new RangeError('invalid IPv6 address "fe80::1%eth0": zone ids are not supported'),
    );
  });
});

describe('formatIPv6 (RFC 5952)', () => {
  it.each([
    ['fd000088 00000000 00000000 00000005', 'fd00:88::5'],
    ['fd000000 00000000 00000000 00000005', 'fd00::5'],
    ['fe800000 00000000 00000000 00000001', 'fe80::1'],
    // §4.2.3: a tie compresses the leftmost run
    ['20010db8 00000000 00010000 00000001', '2001:db8::1:0:0:1'],
    // §4.2.3: the longest run wins, wherever it is
    ['20010000 00000001 00000000 00000001', '2001:0:0:1::1'],
    // §4.2.2: a single zero group is not compressed
    ['20010db8 00000001 00010001 00010001', '2001:db8:0:1:1:1:1:1'],
    // §4.1 no leading zeros, §4.3 lowercase
    ['20010db8 00000000 00000000 0000aaaa', '2001:db8::aaaa'],
    ['20010db8 00000000 00000000 00020001', '2001:db8::2:1'],
    ['00000000 00000000 00000000 00000000', '::'],
    ['00000000 00000000 00000000 00000001', '::1'],
    ['00010000 00000000 00000000 00000000', '1::'],
    ['00010002 00030004 00050006 00070000', '1:2:3:4:5:6:7:0'],
    ['00000002 00030004 00050006 00070008', '0:2:3:4:5:6:7:8'],
    ['00010000 00000004 00050000 00000008', '1::4:5:0:0:8'],
    ['ffffffff ffffffff ffffffff ffffffff', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    // §5: IPv4-mapped addresses use the dotted tail (Go's net.IP.String() would print "1.2.3.4")
    ['00000000 00000000 0000ffff 01020304', '::ffff:1.2.3.4'],
    // other embedded-IPv4 forms print as plain hex, as Go does
    ['00000000 00000000 00000000 01020304', '::102:304'],
    ['0064ff9b 00000000 00000000 c0000221', '64:ff9b::c000:221'],
  ])('formats %s as %s', (hex, text) => {
    expect(formatIPv6(bytes(hex))).toBe(text);
  });

  it('rejects a wrong length', () => {
    expect(() => formatIPv6(bytes('0a580005'))).toThrow(
      new RangeError('IPv6 address must be 16 bytes, got 4 (0a580005)'),
    );
  });
});

describe('canonicalIP', () => {
  it.each([
    ['10.88.0.5', '10.88.0.5'],
    ['FD00:0088:0:0::0005', 'fd00:88::5'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['::FFFF:0a58:0005', '::ffff:10.88.0.5'],
  ])('canonicalizes %s', (text, canonical) => {
    expect(canonicalIP(text)).toBe(canonical);
  });

  it('rejects junk', () => {
    expect(() => canonicalIP('pod')).toThrow(new RangeError('invalid IP address "pod": neither IPv4 nor IPv6'));
    expect(() => canonicalIP('10.88.0.256')).toThrow(RangeError);
  });
});

describe('ipFamily', () => {
  it('tells the families apart', () => {
    expect(ipFamily('10.88.0.5')).toBe(4);
    expect(ipFamily('fd00:88::5')).toBe(6);
    expect(ipFamily('::ffff:10.88.0.5')).toBe(6);
  });

  it('throws for neither, with the precise reason when it looks like IPv6', () => {
    expect(() => ipFamily('')).toThrow(new RangeError('invalid IP address "": neither IPv4 nor IPv6'));
    expect(() => ipFamily('10.88.0.5/24')).toThrow(RangeError);
    expect(() => ipFamily('fd00::5::1')).toThrow(new RangeError('invalid IPv6 address "fd00::5::1"'));
    expect(() => ipFamily('fe80::1%eth0')).toThrow('zone ids are not supported');
  });
});

describe('parseCidr', () => {
  it('reads the family and prefix length, host bits allowed', () => {
    expect(parseCidr('10.88.0.5/24')).toEqual({ family: 4, prefixLength: 24 });
    expect(parseCidr('FD00:0088:0::0005/64')).toEqual({ family: 6, prefixLength: 64 });
  });

  it('accepts the extreme prefix lengths', () => {
    expect(parseCidr('0.0.0.0/0')?.prefixLength).toBe(0);
    expect(parseCidr('10.88.0.5/32')?.prefixLength).toBe(32);
    expect(parseCidr('::/0')?.prefixLength).toBe(0);
    expect(parseCidr('fd00::5/128')?.prefixLength).toBe(128);
  });

  it.each([
    ['10.88.0.5'],
    ['10.88.0.5/'],
    ['10.88.0.5/33'],
    ['10.88.0.5/024'],
    ['10.88.0.5/-1'],
    ['10.88.0.5/ 24'],
    ['10.88.0.5/24/1'],
    ['10.88.0.5/1e1'],
    ['fd00::5/129'],
    ['fd00::5/0x40'],
    ['bogus/24'],
    ['/24'],
    ['10.88.0.256/24'],
    ['fe80::1%eth0/64'],
  ])('rejects %j', (text) => {
    expect(parseCidr(text)).toBeUndefined();
  });
});

describe('parseIP', () => {
  it.each([
    ['10.88.0.5', '0a580005'],
    ['::', '00000000000000000000000000000000'],
    ['FD00:88::5', 'fd000088000000000000000000000005'],
    ['::ffff:10.1.2.3', '00000000000000000000ffff0a010203'],
  ])('reads %j', (text, hex) => {
    expect(parseIP(text)?.toString('hex')).toBe(hex);
  });

  it.each([['10.88.0.5/24'], ['fe80::1%eth0'], [''], ['10.88.0.256'], ['fd00::5::1']])('rejects %j', (text) => {
    expect(parseIP(text)).toBeUndefined();
  });
});

describe('isIPv6LinkLocal', () => {
  it('matches fe80::/10 only', () => {
    expect(isIPv6LinkLocal(bytes('fe800000 00000000 00000000 00000001'))).toBe(true);
    expect(isIPv6LinkLocal(bytes('febfffff ffffffff ffffffff ffffffff'))).toBe(true);
    expect(isIPv6LinkLocal(bytes('fec00000 00000000 00000000 00000001'))).toBe(false);
    expect(isIPv6LinkLocal(bytes('fe7f0000 00000000 00000000 00000001'))).toBe(false);
    expect(isIPv6LinkLocal(bytes('ff020000 00000000 00000000 00000001'))).toBe(false);
    expect(isIPv6LinkLocal(bytes('ff800000 00000000 00000000 00000001'))).toBe(false);
    expect(isIPv6LinkLocal(bytes('fd000088 00000000 00000000 00000005'))).toBe(false);
  });

  it('rejects a wrong length', () => {
    expect(() => isIPv6LinkLocal(bytes('0a580005'))).toThrow(
      new RangeError('IPv6 address must be 16 bytes, got 4 (0a580005)'),
    );
  });
});

describe('isIPv4Mapped', () => {
  it('matches ::ffff:0:0/96 only', () => {
    expect(isIPv4Mapped(bytes('00000000 00000000 0000ffff 0a580005'))).toBe(true);
    expect(isIPv4Mapped(bytes('00000000 00000000 00000000 0a580005'))).toBe(false);
    expect(isIPv4Mapped(bytes('00000000 00000000 ffffffff 0a580005'))).toBe(false);
    expect(isIPv4Mapped(bytes('00000000 00000000 000000ff 0a580005'))).toBe(false);
    expect(isIPv4Mapped(bytes('00000000 00000000 0000ff00 0a580005'))).toBe(false);
  });

  it('rejects a wrong length', () => {
    expect(() => isIPv4Mapped(bytes('0a580005'))).toThrow(
      new RangeError('IPv6 address must be 16 bytes, got 4 (0a580005)'),
    );
  });
});
