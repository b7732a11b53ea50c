// Pure: unsolicited IPv6 Neighbor Advertisement frames (RFC 4861 §4.4, §7.2.6). No I/O.
import { internetChecksum } from './checksum';
import { ETHERTYPE_IPV6, ethernetFrame } from './ethernet';
import { formatIPv6 } from './ip';
import { expectLength } from './length';
import { IPV6_ALL_NODES_MAC } from './mac';

const ALL_NODES = Buffer.from('ff020000000000000000000000000001', 'hex');
const NEXT_HEADER_ICMPV6 = 58;
const HOP_LIMIT = 255; // receivers drop NAs with any other hop limit
const ICMPV6_NEIGHBOR_ADVERT = 136;
const FLAG_ROUTER = 0x80;
const FLAG_OVERRIDE = 0x20; // S (0x40) is never set: the advert is unsolicited
const OPTION_TARGET_LL_ADDR = 2;
const ICMP_LENGTH = 32; // 4 header + 4 flags/reserved + 16 target + 8 option

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
  if (ip[0] === 0xff || ip.every((b) => b === 0)) {
    throw new RangeError(`NA target ${formatIPv6(ip)} must be a unicast address`);
  }

  const icmp = Buffer.alloc(ICMP_LENGTH);
  icmp[0] = ICMPV6_NEIGHBOR_ADVERT;
  icmp[1] = 0; // code
  // icmp[2..3] checksum, filled below; icmp[5..7] reserved
  icmp[4] = (router ? FLAG_ROUTER : 0) | (override ? FLAG_OVERRIDE : 0);
  icmp.set(ip, 8);
  icmp[24] = OPTION_TARGET_LL_ADDR;
  icmp[25] = 1; // option length in units of 8 bytes
  icmp.set(mac, 26);

  const pseudo = Buffer.alloc(8); // upper-layer length (u32), 3 zero bytes, next header
  pseudo.writeUInt32BE(ICMP_LENGTH, 0);
  pseudo[7] = NEXT_HEADER_ICMPV6;
  icmp.writeUInt16BE(internetChecksum(ip, ALL_NODES, pseudo, icmp), 2);

  const packet = Buffer.alloc(40 + ICMP_LENGTH);
  packet.writeUInt32BE(0x60000000, 0); // version 6, traffic class 0, flow label 0
  packet.writeUInt16BE(ICMP_LENGTH, 4);
  packet[6] = NEXT_HEADER_ICMPV6;
  packet[7] = HOP_LIMIT;
  packet.set(ip, 8); // source: the target address itself, as the kernel does
  packet.set(ALL_NODES, 24);
  packet.set(icmp, 40);
  return ethernetFrame(IPV6_ALL_NODES_MAC, mac, ETHERTYPE_IPV6, packet);
}
