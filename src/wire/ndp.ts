// Pure: unsolicited IPv6 Neighbor Advertisement frames (RFC 4861 §4.4, §7.2.6), Neighbor Solicitations for another
// host's address (§4.3, §7.2.2) and parsing of received Neighbor Advertisements (§7.1.2), with the RFC 1071
// checksum ICMPv6 carries. No I/O.
import { ETHERNET_HEADER_BYTES, ETHERTYPE_IPV6, ethernetFrame, IPV6_ALL_NODES_MAC } from './ethernet';
import { expectLength, formatIPv6 } from './ip';

const ALL_NODES = Buffer.from('ff020000000000000000000000000001', 'hex');
const NEXT_HEADER_ICMPV6 = 58;
const HOP_LIMIT = 255; // receivers drop NAs with any other hop limit
const ICMPV6_NEIGHBOR_SOLICIT = 135;
const ICMPV6_NEIGHBOR_ADVERT = 136;
const FLAG_ROUTER = 0x80;
const FLAG_SOLICITED = 0x40;
const FLAG_OVERRIDE = 0x20; // S (0x40) is never set: the advert is unsolicited
const OPTION_SOURCE_LL_ADDR = 1;
const OPTION_TARGET_LL_ADDR = 2;
const ICMP_LENGTH = 32; // 4 header + 4 flags/reserved + 16 target + 8 option (NA and NS alike)
const IPV6_HEADER_BYTES = 40;
const NA_MIN_BYTES = 24; // 4 header + 4 flags/reserved + 16 target

/** Builds an 86-byte NA from `ip` to ff02::1 with a target link-layer option carrying `mac`. */
export function unsolicitedNeighborAdvert(opts: {
  mac: Uint8Array;
  ip: Uint8Array;
  router: boolean;
  override: boolean;
}): Buffer {
  const { mac, ip, router, override } = opts;
  expectLength(mac, 6, 'NA link-layer address');
  expectLength(ip, 16, 'NA target IPv6 address');
  if (!isUnicast(ip)) throw new RangeError(`NA target ${formatIPv6(ip)} must be a unicast address`);

  const flags = (router ? FLAG_ROUTER : 0) | (override ? FLAG_OVERRIDE : 0);
  const icmp = neighborMessage(ICMPV6_NEIGHBOR_ADVERT, flags, ip, OPTION_TARGET_LL_ADDR, mac);
  return ethernetFrame(IPV6_ALL_NODES_MAC, mac, ETHERTYPE_IPV6, ipv6Packet(ip, ALL_NODES, icmp));
}

/**
 * Builds an 86-byte NS from `mac`/`ip` for `target`, to target's solicited-node group, with a source link-layer option
 * carrying `mac`: the host that holds `target` creates or updates its entry for `ip` (RFC 4861 §7.2.3) and answers
 * with a solicited NA.
 */
export function neighborSolicitation(opts: { mac: Uint8Array; ip: Uint8Array; target: Uint8Array }): Buffer {
  const { mac, ip, target } = opts;
  expectLength(mac, 6, 'NS link-layer address');
  expectLength(ip, 16, 'NS source IPv6 address');
  expectLength(target, 16, 'NS target IPv6 address');
  // An unspecified source must not carry the link-layer option (§4.3), and would teach the target nothing.
  if (!isUnicast(ip)) throw new RangeError(`NS source ${formatIPv6(ip)} must be a unicast address`);
  if (!isUnicast(target)) throw new RangeError(`NS target ${formatIPv6(target)} must be a unicast address`);

  const icmp = neighborMessage(ICMPV6_NEIGHBOR_SOLICIT, 0, target, OPTION_SOURCE_LL_ADDR, mac);
  const group = Buffer.from('ff0200000000000000000001ff000000', 'hex');
  target.subarray(13).forEach((b, i) => {
    group[13 + i] = b;
  });
  const groupMac = Buffer.concat([Buffer.from([0x33, 0x33]), group.subarray(12)]);
  return ethernetFrame(groupMac, mac, ETHERTYPE_IPV6, ipv6Packet(ip, group, icmp));
}

/** A Neighbor Advertisement as received; every buffer is a copy. */
export interface NeighborAdvert {
  /** Ethernet source MAC. */
  ethSource: Buffer;
  /** IPv6 source address. */
  source: Buffer;
  /** The address advertised. */
  target: Buffer;
  /** The target link-layer address option's MAC, when the NA carries one. */
  targetMac?: Buffer;
  router: boolean;
  solicited: boolean;
  override: boolean;
}

/**
 * Parses a frame holding an Ethernet/IPv6 NA without extension headers that passes RFC 4861 §7.1.2's length, hop
 * limit and code checks (the checksum is not verified); undefined for anything else.
 */
export function parseNeighborAdvert(frame: Uint8Array): NeighborAdvert | undefined {
  const ip = ETHERNET_HEADER_BYTES;
  const icmp = ip + IPV6_HEADER_BYTES;
  if (frame.length < icmp + NA_MIN_BYTES) return undefined;
  const f = Buffer.from(frame.buffer, frame.byteOffset, frame.length);
  if (f.readUInt16BE(12) !== ETHERTYPE_IPV6 || f[ip]! >> 4 !== 6) return undefined;
  if (f[ip + 6] !== NEXT_HEADER_ICMPV6 || f[ip + 7] !== HOP_LIMIT) return undefined;
  const length = f.readUInt16BE(ip + 4); // payload length: the ICMPv6 message, without extension headers
  if (length < NA_MIN_BYTES || icmp + length > f.length) return undefined;
  if (f[icmp] !== ICMPV6_NEIGHBOR_ADVERT || f[icmp + 1] !== 0) return undefined;
  const copy = (from: number, n: number): Buffer => Buffer.from(f.subarray(from, from + n));
  let targetMac: Buffer | undefined;
  for (let at = icmp + NA_MIN_BYTES; at < icmp + length; ) {
    const units = f[at + 1] ?? 0; // in 8-byte units
    // §7.1.2: an option of length 0, or one running past the message, invalidates the whole NA.
    if (units === 0 || at + units * 8 > icmp + length) return undefined;
    if (f[at] === OPTION_TARGET_LL_ADDR && units === 1) targetMac = copy(at + 2, 6); // 1: an Ethernet address
    at += units * 8;
  }
  const flags = f[icmp + 4]!;
  const advert: NeighborAdvert = {
    ethSource: copy(6, 6),
    source: copy(ip + 8, 16),
    target: copy(icmp + 8, 16),
    router: (flags & FLAG_ROUTER) !== 0,
    solicited: (flags & FLAG_SOLICITED) !== 0,
    override: (flags & FLAG_OVERRIDE) !== 0,
  };
  if (targetMac) advert.targetMac = targetMac;
  return advert;
}

/** An NA or NS (code 0; ipv6Packet fills the checksum): `type`, `flags`, `target`, a link-layer option with `mac`. */
function neighborMessage(type: number, flags: number, target: Uint8Array, option: number, mac: Uint8Array): Buffer {
  const icmp = Buffer.alloc(ICMP_LENGTH);
  icmp[0] = type;
  icmp[4] = flags;
  icmp.set(target, 8);
  icmp[24] = option;
  icmp[25] = 1; // option length in units of 8 bytes
  icmp.set(mac, 26);
  return icmp;
}

/** An IPv6 header (hop limit 255, next header ICMPv6) followed by `icmp`, its checksum filled in. */
function ipv6Packet(source: Uint8Array, destination: Uint8Array, icmp: Buffer): Buffer {
  const pseudo = Buffer.alloc(8); // upper-layer length (u32), 3 zero bytes, next header
  pseudo.writeUInt32BE(icmp.length, 0);
  pseudo[7] = NEXT_HEADER_ICMPV6;
  icmp.writeUInt16BE(internetChecksum(source, destination, pseudo, icmp), 2);

  const packet = Buffer.alloc(IPV6_HEADER_BYTES + icmp.length);
  packet.writeUInt32BE(0x60000000, 0); // version 6, traffic class 0, flow label 0
  packet.writeUInt16BE(icmp.length, 4);
  packet[6] = NEXT_HEADER_ICMPV6;
  packet[7] = HOP_LIMIT;
  packet.set(source, 8);
  packet.set(destination, 24);
  packet.set(icmp, IPV6_HEADER_BYTES);
  return packet;
}

/** One's-complement checksum (RFC 1071) over the parts read as one byte stream, odd tail padded with a zero byte. */
export function internetChecksum(...parts: Uint8Array[]): number {
  let sum = 0;
  let high = true; // whether the next byte is the high half of a 16-bit word
  for (const part of parts) {
    for (const byte of part) {
      sum += high ? byte << 8 : byte;
      high = !high;
    }
    // Fold per part so the sum stays far below 2^53 for any input size.
    sum = (sum & 0xffff) + Math.floor(sum / 0x10000);
  }
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** Neither multicast nor unspecified. */
function isUnicast(ip: Uint8Array): boolean {
  return ip[0] !== 0xff && !ip.every((b) => b === 0);
}
