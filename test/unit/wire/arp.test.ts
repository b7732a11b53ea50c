import { beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Arp from '../../../src/wire/arp';

// Each test loads the module afresh: its tables (the opcodes), made when it loads, are then the test's own (a
// mutation run activates a mutant only inside a test).
let { arpProbe, arpRequest, classifyArp, gratuitousArp, parseArp } = {} as typeof Arp;
beforeEach(async () => {
  vi.resetModules();
  ({ arpProbe, arpRequest, classifyArp, gratuitousArp, parseArp } = await import('../../../src/wire/arp'));
});

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');
const OURS = '02420a580005'; // the pod's interface: the builders' MAC, the probing interface
const SIBLING = '02420a590007'; // another interface of the same pod
const OTHER = '525400123456'; // a live host
const THIRD = '5254000000aa';
const PROBED = '0a580005'; // 10.88.0.5: the builders' address, the address probed
const ALSO_PROBED = '0a580006'; // 10.88.0.6
const GATEWAY = '0a580001'; // 10.88.0.1
const ZERO_IP = '00000000';
const ZERO_MAC = '000000000000';
const MAC = bytes(OURS);
const IP = bytes(PROBED);

/**
 * A hand-built Ethernet/IPv4 ARP frame (RFC 826): Ethernet dst (broadcast unless given), src (the sender MAC unless
 * given), ethertype 0806; htype 1, ptype 0800, hlen 6, plen 4, op; sha, spa, tha, tpa.
 */
function frame(f: {
  op: 1 | 2 | 3;
  sha: string;
  spa: string;
  tha: string;
  tpa: string;
  dst?: string;
  src?: string;
}): Buffer {
  return bytes(
    `${f.dst ?? 'ffffffffffff'}${f.src ?? f.sha}0806 0001 0800 06 04 000${f.op} ${f.sha}${f.spa}${f.tha}${f.tpa}`,
  );
}

// RFC 5227 announcement (tha zero, tpa = spa) and its reply form (tha = sha): tshark decodes both as
// "[Is gratuitous: True]".
const REQUEST = frame({ op: 1, sha: OURS, spa: PROBED, tha: ZERO_MAC, tpa: PROBED });
const REPLY = frame({ op: 2, sha: OURS, spa: PROBED, tha: OURS, tpa: PROBED });
// RFC 5227 §2.1.1: tshark decodes it as "Who has 10.88.0.5? Tell 0.0.0.0", [Is probe: True].
const PROBE = frame({ op: 1, sha: OURS, spa: ZERO_IP, tha: ZERO_MAC, tpa: PROBED });
// RFC 826: tshark decodes it as "Who has 10.88.0.1? Tell 10.88.0.5" (not gratuitous, no probe).
const GATEWAY_REQUEST = frame({ op: 1, sha: OURS, spa: PROBED, tha: ZERO_MAC, tpa: GATEWAY });

describe('the ARP builders: 42-byte broadcast frames from the pod MAC', () => {
  it.each([
    [
      'gratuitousArp builds the RFC 5227 announcement (op 1)',
      () => gratuitousArp({ mac: MAC, ip: IP, op: 'request' }),
      REQUEST,
    ],
    [
      'gratuitousArp builds the reply form (op 2, tha = sha)',
      () => gratuitousArp({ mac: MAC, ip: IP, op: 'reply' }),
      REPLY,
    ],
    [
      'arpProbe builds the RFC 5227 probe: sender IP 0.0.0.0, target MAC zero',
      () => arpProbe({ mac: MAC, ip: IP }),
      PROBE,
    ],
    [
      'arpRequest builds the request for the target from the pod address',
      () => arpRequest({ mac: MAC, ip: IP, targetIp: bytes(GATEWAY) }),
      GATEWAY_REQUEST,
    ],
  ])('%s', (_what, build, expected) => {
    expect(build().toString('hex')).toBe(expected.toString('hex'));
  });

  it('returns fresh frames that do not alias shared constants', () => {
    gratuitousArp({ mac: MAC, ip: IP, op: 'request' }).fill(0);
    expect(gratuitousArp({ mac: MAC, ip: IP, op: 'request' }).toString('hex')).toBe(REQUEST.toString('hex'));
  });

  const GW = bytes(GATEWAY);
  const SHORT_MAC = bytes('02420a5800');
  const MULTICAST = bytes('01005e000001');
  const senderMac = new RangeError('ARP sender MAC must be 6 bytes, got 5 (02420a5800)');
  it.each([
    ['gratuitousArp: a short MAC', () => gratuitousArp({ mac: SHORT_MAC, ip: IP, op: 'request' }), senderMac],
    [
      'gratuitousArp: an IPv6 address',
      () => gratuitousArp({ mac: MAC, ip: bytes('fd000088000000000000000000000005'), op: 'request' }),
      new RangeError('ARP sender IPv4 address must be 4 bytes, got 16 (fd000088000000000000000000000005)'),
    ],
    ['gratuitousArp: a multicast MAC', () => gratuitousArp({ mac: MULTICAST, ip: IP, op: 'request' }), RangeError],
    ['arpProbe: a short MAC', () => arpProbe({ mac: SHORT_MAC, ip: IP }), senderMac],
    [
      'arpProbe: a short address',
      () => arpProbe({ mac: MAC, ip: bytes('0a5800') }),
      new RangeError('ARP target IPv4 address must be 4 bytes, got 3 (0a5800)'),
    ],
    ['arpProbe: a multicast MAC', () => arpProbe({ mac: MULTICAST, ip: IP }), RangeError],
    ['arpRequest: a short MAC', () => arpRequest({ mac: SHORT_MAC, ip: IP, targetIp: GW }), senderMac],
    [
      'arpRequest: a short sender address',
      () => arpRequest({ mac: MAC, ip: bytes('0a5800'), targetIp: GW }),
      new RangeError('ARP sender IPv4 address must be 4 bytes, got 3 (0a5800)'),
    ],
    [
      'arpRequest: a long target address',
      () => arpRequest({ mac: MAC, ip: IP, targetIp: bytes('0a58000100') }),
      new RangeError('ARP target IPv4 address must be 4 bytes, got 5 (0a58000100)'),
    ],
    ['arpRequest: a multicast MAC', () => arpRequest({ mac: MULTICAST, ip: IP, targetIp: GW }), RangeError],
  ])('rejects %s', (_what, build, error) => {
    expect(build).toThrow(error);
  });
});

describe('parseArp', () => {
  const PROBE_HEX = PROBE.toString('hex');
  // A unicast reply to the probe above from 52:54:00:12:34:56, padded to 60 bytes by its sender.
  const REPLY_TO_PROBE = Buffer.concat([
    frame({ op: 2, sha: OTHER, spa: PROBED, tha: OURS, tpa: ZERO_IP, dst: OURS }),
    Buffer.alloc(18),
  ]).toString('hex');

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
    const big = Buffer.concat([bytes('aabbcc'), PROBE]);
    expect(parseArp(big.subarray(3))?.targetIp.toString('hex')).toBe('0a580005');
  });

  it.each([
    ['a short frame', PROBE_HEX.slice(0, 82)],
    ['another ethertype', PROBE_HEX.replace('0806', '86dd')],
    ['another hardware type', PROBE_HEX.replace('08060001', '08060006')],
    ['another protocol type', PROBE_HEX.replace('00010800', '000186dd')],
    ['another hardware length', PROBE_HEX.replace('08000604', '08000804')],
    ['another protocol length', PROBE_HEX.replace('08000604', '08000610')],
  ])('ignores %s', (_, hex) => {
    expect(parseArp(bytes(hex))).toBeUndefined();
  });
});

const probing = [bytes(PROBED), bytes(ALSO_PROBED)];
const ownMacs = [bytes(OURS), bytes(SIBLING)];

function classify(f: Buffer): { address: string; mac: string; kind: string } | undefined {
  const c = classifyArp(parseArp(f)!, probing, ownMacs);
  return c && { address: c.address.toString('hex'), mac: c.mac.toString('hex'), kind: c.kind };
}

describe('classifyArp', () => {
  it.each([
    [
      'a reply to our probe from a live host (unicast to us)',
      frame({ op: 2, sha: OTHER, spa: PROBED, tha: OURS, tpa: ZERO_IP, dst: OURS }),
      { address: PROBED, mac: OTHER, kind: 'reply' },
    ],
    [
      'a reply for the second address probed',
      frame({ op: 2, sha: THIRD, spa: ALSO_PROBED, tha: OURS, tpa: ZERO_IP, dst: OURS }),
      { address: ALSO_PROBED, mac: THIRD, kind: 'reply' },
    ],
    [
      'a gratuitous ARP (announcement) of the address by another host',
      frame({ op: 1, sha: OTHER, spa: PROBED, tha: ZERO_MAC, tpa: PROBED }),
      { address: PROBED, mac: OTHER, kind: 'request' },
    ],
    [
      'a gratuitous reply (tha = sha) of the address by another host',
      frame({ op: 2, sha: OTHER, spa: PROBED, tha: OTHER, tpa: PROBED }),
      { address: PROBED, mac: OTHER, kind: 'reply' },
    ],
    [
      'another host asking for the gateway from the address',
      frame({ op: 1, sha: OTHER, spa: PROBED, tha: ZERO_MAC, tpa: GATEWAY }),
      { address: PROBED, mac: OTHER, kind: 'request' },
    ],
    [
      "another host's probe for the address (RFC 5227 §2.1.1)",
      frame({ op: 1, sha: OTHER, spa: ZERO_IP, tha: ZERO_MAC, tpa: PROBED }),
      { address: PROBED, mac: OTHER, kind: 'probe' },
    ],
    [
      'a reply whose Ethernet source differs: the ARP sender MAC is what is named',
      frame({ op: 2, sha: OTHER, spa: PROBED, tha: OURS, tpa: ZERO_IP, dst: OURS, src: THIRD }),
      { address: PROBED, mac: OTHER, kind: 'reply' },
    ],
  ])('conflict: %s', (_, f, expected) => {
    expect(classify(f)).toEqual(expected);
  });

  it.each([
    ['our own probe, seen going out', frame({ op: 1, sha: OURS, spa: ZERO_IP, tha: ZERO_MAC, tpa: PROBED })],
    ['our own gratuitous ARP', frame({ op: 1, sha: OURS, spa: PROBED, tha: ZERO_MAC, tpa: PROBED })],
    [
      "the same pod's other interface answering for the address",
      frame({ op: 2, sha: SIBLING, spa: PROBED, tha: OURS, tpa: ZERO_IP, dst: OURS }),
    ],
    [
      "the same pod's other interface probing the address",
      frame({ op: 1, sha: SIBLING, spa: ZERO_IP, tha: ZERO_MAC, tpa: PROBED }),
    ],
    ['the gateway asking who has the address', frame({ op: 1, sha: OTHER, spa: GATEWAY, tha: ZERO_MAC, tpa: PROBED })],
    ['the gateway announcing itself', frame({ op: 1, sha: OTHER, spa: GATEWAY, tha: ZERO_MAC, tpa: GATEWAY })],
    [
      "another host's reply about another address",
      frame({ op: 2, sha: OTHER, spa: GATEWAY, tha: THIRD, tpa: '0a580009' }),
    ],
    [
      "another host's probe for another address",
      frame({ op: 1, sha: OTHER, spa: ZERO_IP, tha: ZERO_MAC, tpa: '0a580009' }),
    ],
    [
      'a reply with sender IP 0.0.0.0 naming the address as target',
      frame({ op: 2, sha: OTHER, spa: ZERO_IP, tha: OURS, tpa: PROBED }),
    ],
    ['a RARP-style opcode 3 with the address', frame({ op: 3, sha: OTHER, spa: PROBED, tha: OTHER, tpa: PROBED })],
  ])('no conflict: %s', (_, f) => {
    expect(classify(f)).toBeUndefined();
  });

  it('returns copies of the address and MAC', () => {
    const packet = parseArp(frame({ op: 2, sha: OTHER, spa: PROBED, tha: OURS, tpa: ZERO_IP }))!;
    const conflict = classifyArp(packet, probing, ownMacs)!;
    packet.senderMac.fill(0);
    probing[0]!.fill(0xff);
    try {
      expect([conflict.address.toString('hex'), conflict.mac.toString('hex')]).toEqual([PROBED, OTHER]);
    } finally {
      bytes(PROBED).copy(probing[0]!);
    }
  });

  it('finds nothing when nothing is probed', () => {
    expect(
      classifyArp(parseArp(frame({ op: 2, sha: OTHER, spa: PROBED, tha: OURS, tpa: ZERO_IP }))!, [], ownMacs),
    ).toBeUndefined();
  });
});
