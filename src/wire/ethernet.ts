// Pure: Ethernet: MAC addresses (text, bits, and the IP-derived MACs OpenShift SDN and
// ovn-kubernetes build) and Ethernet II frames. No I/O.
import { expectLength, formatIPv6, ipFamily, isIPv4Mapped, parseIPv4, parseIPv6 } from './ip';

/** EtherType of ARP. */
export const ETHERTYPE_ARP = 0x0806;

/** EtherType of IPv6. */
export const ETHERTYPE_IPV6 = 0x86dd;

/** An Ethernet II header's size: destination MAC, source MAC, EtherType. */
export const ETHERNET_HEADER_BYTES = 14;

/** ff:ff:ff:ff:ff:ff. Shared constant: never mutate it; frame builders copy it. */
export const BROADCAST_MAC: Buffer = Buffer.from('ffffffffffff', 'hex');

/** 33:33:00:00:00:01, the Ethernet group of ff02::1. Shared constant: never mutate it; frame builders copy it. */
export const IPV6_ALL_NODES_MAC: Buffer = Buffer.from('333300000001', 'hex');

const MAC_TEXT = /^[0-9a-f]{2}([:-])[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}$/i;
const PREFIX_TEXT = /^[0-9a-f]{2}[:-][0-9a-f]{2}$/i;

/** Parses "aa:bb:cc:dd:ee:ff" (or '-' separators, any case) into 6 fresh bytes; throws RangeError otherwise. */
export function parseMac(text: string): Buffer {
  if (!MAC_TEXT.test(text)) {
    throw new RangeError(`invalid MAC address "${text}": want six hex pairs separated by ':' or '-'`);
  }
  return Buffer.from(text.replace(/[:-]/g, ''), 'hex');
}

/** Formats 6 bytes as lowercase, colon-separated text. */
export function formatMac(mac: Uint8Array): string {
  expectLength(mac, 6, 'MAC address');
  return Array.from(mac, (b) => b.toString(16).padStart(2, '0')).join(':');
}

/** True if the group (multicast) bit, 0x01 of the first byte, is set. */
export function isMulticastMac(mac: Uint8Array): boolean {
  expectLength(mac, 6, 'MAC address');
  return (mac[0]! & 0x01) !== 0;
}

/** True if the locally-administered bit, 0x02 of the first byte, is set. */
export function isLocallyAdministeredMac(mac: Uint8Array): boolean {
  expectLength(mac, 6, 'MAC address');
  return (mac[0]! & 0x02) !== 0;
}

/**
 * A MAC from an address: a two-byte prefix such as "0a:58" (or '-'; RangeError on bad syntax or a multicast first
 * byte) + the IPv4 bytes (IPv4-mapped IPv6 too, as ovn-kubernetes does), or + 4 bytes of sha256 of the canonical IPv6
 * text.
 */
export function deriveMac(prefix: string, address: string): Buffer {
  const badPrefix = (why: string) => new RangeError(`invalid MAC prefix "${prefix}": ${why}`);
  if (!PREFIX_TEXT.test(prefix)) throw badPrefix('want two hex pairs such as "0a:58"');
  const mac = Buffer.alloc(6);
  mac.write(prefix.replace(/[:-]/, ''), 'hex');
  if (isMulticastMac(mac)) throw badPrefix('the multicast bit (0x01 of the first byte) is set');
  if (ipFamily(address) === 4) {
    mac.set(parseIPv4(address), 2);
    return mac;
  }
  const bytes = parseIPv6(address);
  if (isIPv4Mapped(bytes)) {
    mac.set(bytes.subarray(12), 2);
    return mac;
  }
  // node:crypto is loaded here, not at import: loading it would slow every start of the plugin.
  const { createHash } = process.getBuiltinModule('node:crypto');
  const digest = createHash('sha256').update(formatIPv6(bytes), 'ascii').digest();
  mac.set(digest.subarray(0, 4), 2);
  return mac;
}

/** Builds a fresh Ethernet II frame (no FCS, no padding); src must be unicast. */
export function ethernetFrame(
  dst: Uint8Array,
  src: Uint8Array,
  ethertype: typeof ETHERTYPE_ARP | typeof ETHERTYPE_IPV6,
  payload: Uint8Array,
): Buffer {
  expectLength(dst, 6, 'destination MAC');
  expectLength(src, 6, 'source MAC');
  if (isMulticastMac(src)) {
    throw new RangeError(`source MAC ${formatMac(src)} is multicast`);
  }
  const frame = Buffer.alloc(ETHERNET_HEADER_BYTES + payload.length);
  frame.set(dst, 0);
  frame.set(src, 6);
  frame.writeUInt16BE(ethertype, 12);
  frame.set(payload, ETHERNET_HEADER_BYTES);
  return frame;
}
