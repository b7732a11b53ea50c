// Pure: ARP frames: gratuitous ARP (RFC 5227 announcement and the reply form),
// the RFC 5227 probe, an ordinary request for another host's address, parsing of
// received Ethernet/IPv4 ARP frames, and RFC 5227 §2.1.1 conflict detection on them. No I/O.
import { BROADCAST_MAC, ETHERNET_HEADER_BYTES, ETHERTYPE_ARP, ethernetFrame } from './ethernet';
import { expectLength } from './ip';

/** Which gratuitous ARP form to build: op 1 announcement or op 2 reply. */
export type ArpOp = 'request' | 'reply';

const HTYPE_ETHERNET = 1;
const PTYPE_IPV4 = 0x0800;
const OPCODE: Record<ArpOp, number> = { request: 1, reply: 2 };
const ARP_BYTES = 28;
const UNSPECIFIED = Buffer.alloc(4);
const ZERO_MAC = Buffer.alloc(6);

/** Builds a 42-byte broadcast gratuitous ARP frame announcing `ip` at `mac`. */
export function gratuitousArp({ mac, ip, op }: { mac: Uint8Array; ip: Uint8Array; op: ArpOp }): Buffer {
  // tha: zero for the RFC 5227 announcement, sha for the reply form (Linux needs tha == sha there); tpa == spa makes
  // it gratuitous.
  return arpFrame(OPCODE[op], mac, ip, op === 'reply' ? mac : ZERO_MAC, ip);
}

/**
 * A 42-byte broadcast RFC 5227 probe for `ip` from `mac`: sender IP 0.0.0.0, so that no neighbour cache learns from it.
 */
export function arpProbe({ mac, ip }: { mac: Uint8Array; ip: Uint8Array }): Buffer {
  return arpFrame(OPCODE.request, mac, UNSPECIFIED, ZERO_MAC, ip);
}

/**
 * A 42-byte broadcast ARP request from `mac`/`ip` for `targetIp` (RFC 826): target MAC zero. The host that holds
 * `targetIp` creates or refreshes its entry for the sender (RFC 826's merge step) and answers with an op 2 reply.
 */
export function arpRequest({ mac, ip, targetIp }: { mac: Uint8Array; ip: Uint8Array; targetIp: Uint8Array }): Buffer {
  return arpFrame(OPCODE.request, mac, ip, ZERO_MAC, targetIp);
}

/** A broadcast Ethernet/IPv4 ARP frame from `sha`: sender MAC and IP, target MAC and IP. */
function arpFrame(opcode: number, sha: Uint8Array, spa: Uint8Array, tha: Uint8Array, tpa: Uint8Array): Buffer {
  expectLength(sha, 6, 'ARP sender MAC');
  expectLength(spa, 4, 'ARP sender IPv4 address');
  expectLength(tpa, 4, 'ARP target IPv4 address');
  const arp = Buffer.alloc(ARP_BYTES);
  arp.writeUInt16BE(HTYPE_ETHERNET, 0);
  arp.writeUInt16BE(PTYPE_IPV4, 2);
  arp[4] = 6; // hlen
  arp[5] = 4; // plen
  arp.writeUInt16BE(opcode, 6);
  arp.set(sha, 8);
  arp.set(spa, 14);
  arp.set(tha, 18);
  arp.set(tpa, 24);
  return ethernetFrame(BROADCAST_MAC, sha, ETHERTYPE_ARP, arp);
}

/** An Ethernet/IPv4 ARP packet as received; every field is a copy. */
export interface ArpPacket {
  /** Ethernet source MAC. */
  source: Buffer;
  /** The ARP opcode: 1 request, 2 reply (others are kept as they are). */
  op: number;
  senderMac: Buffer;
  senderIp: Buffer;
  targetMac: Buffer;
  targetIp: Buffer;
}

/**
 * Parses a frame holding an Ethernet/IPv4 ARP packet (trailing padding ignored); undefined for anything else, a short
 * frame included.
 */
export function parseArp(frame: Uint8Array): ArpPacket | undefined {
  if (frame.length < ETHERNET_HEADER_BYTES + ARP_BYTES) return undefined;
  const f = Buffer.from(frame.buffer, frame.byteOffset, frame.length);
  if (f.readUInt16BE(12) !== ETHERTYPE_ARP) return undefined;
  const a = ETHERNET_HEADER_BYTES;
  if (f.readUInt16BE(a) !== HTYPE_ETHERNET || f.readUInt16BE(a + 2) !== PTYPE_IPV4 || f[a + 4] !== 6 || f[a + 5] !== 4)
    return undefined;
  const copy = (from: number, length: number): Buffer => Buffer.from(f.subarray(from, from + length));
  return {
    source: copy(6, 6),
    op: f.readUInt16BE(a + 6),
    senderMac: copy(a + 8, 6),
    senderIp: copy(a + 14, 4),
    targetMac: copy(a + 18, 6),
    targetIp: copy(a + 24, 4),
  };
}

/** How an ARP packet revealed another user of a probed address. */
export type ConflictKind =
  /** An ARP reply whose sender IP is the address: a host answered for it (our probe, usually). */
  | 'reply'
  /** An ARP request whose sender IP is the address: a host uses it (or announces it). */
  | 'request'
  /** Another host's probe for the address (sender IP 0.0.0.0): it is about to take it. */
  | 'probe';

/** A conflict: `address` is used or claimed by the host at `mac`. */
export interface ArpConflict {
  /** The probed address (4 bytes). */
  address: Buffer;
  /** The ARP sender MAC of the other host. */
  mac: Buffer;
  kind: ConflictKind;
}

/**
 * Whether `packet` shows that another host uses or claims one of the
 * `probing` addresses: a request or reply whose sender IP is the address, or
 * a probe (sender IP 0.0.0.0) whose target IP is it. Packets whose sender MAC
 * is one of `ownMacs` (our own frames, the pod's other interfaces) never are;
 * neither is an ordinary request for the address from a host that uses
 * another one.
 */
export function classifyArp(
  packet: ArpPacket,
  probing: readonly Uint8Array[],
  ownMacs: readonly Uint8Array[],
): ArpConflict | undefined {
  if (packet.op !== OPCODE.request && packet.op !== OPCODE.reply) return undefined;
  if (ownMacs.some((m) => packet.senderMac.equals(m))) return undefined;
  const probe = packet.op === OPCODE.request && packet.senderIp.equals(UNSPECIFIED);
  // A request or a reply claims its sender IP; a probe, its target IP.
  const address = probing.find((a) => (probe ? packet.targetIp : packet.senderIp).equals(a));
  const kind = probe ? 'probe' : packet.op === OPCODE.reply ? 'reply' : 'request';
  return address ? { address: Buffer.from(address), mac: Buffer.from(packet.senderMac), kind } : undefined;
}
