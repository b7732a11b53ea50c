import { describe, it, expect } from 'vitest';
import { type ArpOp, gratuitousArp } from '../../../src/wire/arp';

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');
const MAC = bytes('02420a580005'); // 02:42:0a:58:00:05
const IP = bytes('0a580005'); // 10.88.0.5

// Hand-assembled from RFC 826 / RFC 5227; both decoded by tshark as "[Is gratuitous: True]".
const REQUEST = [
  'ffffffffffff', // eth dst: broadcast
  '02420a580005', // eth src
  '0806', // ethertype ARP
  '0001', // htype Ethernet
  '0800', // ptype IPv4
  '06', // hlen
  '04', // plen
  '0001', // op request
  '02420a580005', // sha
  '0a580005', // spa 10.88.0.5
  '000000000000', // tha zero (RFC 5227 announcement)
  '0a580005', // tpa = spa
].join('');

const REPLY = [
  'ffffffffffff',
  '02420a580005',
  '0806',
  '0001',
  '0800',
  '06',
  '04',
  '0002', // op reply
  '02420a580005', // sha
  '0a580005', // spa
  '02420a580005', // tha = sha
  '0a580005', // tpa = spa
].join('');

describe('gratuitousArp', () => {
  it('builds the 42-byte RFC 5227 announcement (op 1)', () => {
    const frame = gratuitousArp({ mac: MAC, ip: IP, op: 'request' });
    expect(frame.length).toBe(42);
    expect(frame.toString('hex')).toBe(REQUEST);
  });

  it('builds the 42-byte reply form (op 2, tha = sha)', () => {
    const frame = gratuitousArp({ mac: MAC, ip: IP, op: 'reply' });
    expect(frame.length).toBe(42);
    expect(frame.toString('hex')).toBe(REPLY);
  });

  it('returns fresh frames that do not alias shared constants', () => {
    gratuitousArp({ mac: MAC, ip: IP, op: 'request' }).fill(0);
    expect(gratuitousArp({ mac: MAC, ip: IP, op: 'request' }).toString('hex')).toBe(REQUEST);
  });

  it('rejects bad lengths and ops', () => {
    expect(() => gratuitousArp({ mac: bytes('02420a5800'), ip: IP, op: 'request' })).toThrow(
      new RangeError('ARP sender MAC must be 6 bytes, got 5 (02420a5800)'),
    );
    expect(() => gratuitousArp({ mac: MAC, ip: bytes('fd000088000000000000000000000005'), op: 'request' })).toThrow(
      new RangeError('ARP sender IPv4 address must be 4 bytes, got 16 (fd000088000000000000000000000005)'),
    );
    expect(() => gratuitousArp({ mac: MAC, ip: IP, op: 'both' as ArpOp })).toThrow(
      new RangeError('invalid ARP op "both": want "request" or "reply"'),
    );
  });

  it('rejects a multicast sender MAC', () => {
    expect(() => gratuitousArp({ mac: bytes('01005e000001'), ip: IP, op: 'request' })).toThrow(RangeError);
  });
});
