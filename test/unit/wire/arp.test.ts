import { describe, it, expect } from 'vitest';
import { type ArpOp, arpProbe, arpRequest, gratuitousArp, parseArp } from '../../../src/wire/arp';

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

// Hand-assembled from RFC 5227 §2.1.1; tshark decodes it as an ARP probe
// ("Who has 10.88.0.5? Tell 0.0.0.0", [Is probe: True]).
const PROBE = [
  'ffffffffffff', // eth dst: broadcast
  '02420a580005', // eth src
  '0806', // ethertype ARP
  '0001', // htype Ethernet
  '0800', // ptype IPv4
  '06', // hlen
  '04', // plen
  '0001', // op request
  '02420a580005', // sha: ours
  '00000000', // spa 0.0.0.0
  '000000000000', // tha zero
  '0a580005', // tpa: the address probed
].join('');

describe('arpProbe', () => {
  it('builds the 42-byte RFC 5227 probe: sender IP 0.0.0.0, target MAC zero, broadcast', () => {
    const frame = arpProbe({ mac: MAC, ip: IP });
    expect(frame.length).toBe(42);
    expect(frame.toString('hex')).toBe(PROBE);
  });

  it('rejects bad lengths and a multicast sender MAC', () => {
    expect(() => arpProbe({ mac: bytes('02420a5800'), ip: IP })).toThrow(
      new RangeError('ARP sender MAC must be 6 bytes, got 5 (02420a5800)'),
    );
    expect(() => arpProbe({ mac: MAC, ip: bytes('0a5800') })).toThrow(
      new RangeError('ARP target IPv4 address must be 4 bytes, got 3 (0a5800)'),
    );
    expect(() => arpProbe({ mac: bytes('01005e000001'), ip: IP })).toThrow(RangeError);
  });
});

// Hand-assembled from RFC 826; tshark decodes it as "Who has 10.88.0.1? Tell 10.88.0.5" (not gratuitous, no probe).
const GATEWAY_REQUEST = [
  'ffffffffffff', // eth dst: broadcast
  '02420a580005', // eth src
  '0806', // ethertype ARP
  '0001', // htype Ethernet
  '0800', // ptype IPv4
  '06', // hlen
  '04', // plen
  '0001', // op request
  '02420a580005', // sha: the pod
  '0a580005', // spa: the pod's address, 10.88.0.5
  '000000000000', // tha zero
  '0a580001', // tpa: the gateway, 10.88.0.1
].join('');

describe('arpRequest', () => {
  it('builds the 42-byte broadcast request for the target from the pod MAC and address', () => {
    const frame = arpRequest({ mac: MAC, ip: IP, targetIp: bytes('0a580001') });
    expect(frame.length).toBe(42);
    expect(frame.toString('hex')).toBe(GATEWAY_REQUEST);
  });

  it('rejects bad lengths and a multicast sender MAC', () => {
    const GW = bytes('0a580001');
    expect(() => arpRequest({ mac: bytes('02420a5800'), ip: IP, targetIp: GW })).toThrow(
      new RangeError('ARP sender MAC must be 6 bytes, got 5 (02420a5800)'),
    );
    expect(() => arpRequest({ mac: MAC, ip: bytes('0a5800'), targetIp: GW })).toThrow(
      new RangeError('ARP sender IPv4 address must be 4 bytes, got 3 (0a5800)'),
    );
    expect(() => arpRequest({ mac: MAC, ip: IP, targetIp: bytes('0a58000100') })).toThrow(
      new RangeError('ARP target IPv4 address must be 4 bytes, got 5 (0a58000100)'),
    );
    expect(() => arpRequest({ mac: bytes('01005e000001'), ip: IP, targetIp: GW })).toThrow(RangeError);
  });
});

describe('parseArp', () => {
  // A unicast reply to the probe above from 52:54:00:12:34:56, padded to 60 bytes by its sender.
  const REPLY_TO_PROBE = [
    '02420a580005', // eth dst: the prober
    '525400123456', // eth src
    '0806',
    '0001',
    '0800',
    '06',
    '04',
    '0002', // op reply
    '525400123456', // sha
    '0a580005', // spa: the address
    '02420a580005', // tha: the prober
    '00000000', // tpa 0.0.0.0
    '00'.repeat(18), // Ethernet padding
  ].join('');

  it('reads every field of a padded reply', () => {
    const p = parseArp(bytes(REPLY_TO_PROBE))!;
    expect({
      source: p.source.toString('hex'),
      op: p.op,
      senderMac: p.senderMac.toString('hex'),
      senderIp: p.senderIp.toString('hex'),
      targetMac: p.targetMac.toString('hex'),
      targetIp: p.targetIp.toString('hex'),
    }).toEqual({
      source: '525400123456',
      op: 2,
      senderMac: '525400123456',
      senderIp: '0a580005',
      targetMac: '02420a580005',
      targetIp: '00000000',
    });
  });

  it('reads the frames it builds', () => {
    const probe = parseArp(arpProbe({ mac: MAC, ip: IP }))!;
    expect([
      probe.op,
      probe.senderMac.toString('hex'),
      probe.senderIp.toString('hex'),
      probe.targetIp.toString('hex'),
    ]).toEqual([1, '02420a580005', '00000000', '0a580005']);
  });

  it('returns copies: the receive buffer may be reused', () => {
    const buf = bytes(REPLY_TO_PROBE);
    const p = parseArp(buf)!;
    buf.fill(0);
    expect(p.senderMac.toString('hex')).toBe('525400123456');
  });

  it('reads a frame that sits inside a larger buffer', () => {
    const big = Buffer.concat([bytes('aabbcc'), bytes(PROBE)]);
    expect(parseArp(big.subarray(3))?.targetIp.toString('hex')).toBe('0a580005');
  });

  it.each([
    ['a short frame', PROBE.slice(0, 82)],
    ['another ethertype', PROBE.replace('0806', '86dd')],
    ['another hardware type', PROBE.replace('08060001', '08060006')],
    ['another protocol type', PROBE.replace('00010800', '000186dd')],
    ['another hardware length', PROBE.replace('08000604', '08000804')],
    ['another protocol length', PROBE.replace('08000604', '08000610')],
  ])('ignores %s', (_, hex) => {
    expect(parseArp(bytes(hex))).toBeUndefined();
  });
});
