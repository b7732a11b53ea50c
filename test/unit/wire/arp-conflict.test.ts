import { describe, expect, it } from 'vitest';
import { parseArp } from '../../../src/wire/arp';
import { classifyArp } from '../../../src/wire/arp-conflict';

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');

const OURS = '02420a580005'; // the probing interface
const SIBLING = '02420a590007'; // another interface of the same pod
const OTHER = '525400123456'; // a live host
const THIRD = '5254000000aa';
const PROBED = '0a580005'; // 10.88.0.5
const ALSO_PROBED = '0a580006'; // 10.88.0.6
const GATEWAY = '0a580001'; // 10.88.0.1
const ZERO_IP = '00000000';
const ZERO_MAC = '000000000000';

/** A hand-built Ethernet/IPv4 ARP frame; the Ethernet source is the sender MAC unless given. */
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
