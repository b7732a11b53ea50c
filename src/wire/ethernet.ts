// Pure: Ethernet II framing. No I/O.
import { expectLength } from './length';
import { formatMac, isMulticastMac } from './mac';

/** EtherType of ARP. */
export const ETHERTYPE_ARP = 0x0806;

/** EtherType of IPv6. */
export const ETHERTYPE_IPV6 = 0x86dd;

/** Builds a fresh Ethernet II frame (no FCS, no padding); src must be unicast, ethertype 0x0600-0xffff. */
export function ethernetFrame(dst: Uint8Array, src: Uint8Array, ethertype: number, payload: Uint8Array): Buffer {
  expectLength(dst, 6, 'destination MAC');
  expectLength(src, 6, 'source MAC');
  if (isMulticastMac(src)) {
    throw new RangeError(`source MAC ${formatMac(src)} is multicast`);
  }
  // Values below 0x0600 are 802.3 lengths, not EtherTypes.
  if (!Number.isInteger(ethertype) || ethertype < 0x0600 || ethertype > 0xffff) {
    throw new RangeError(`invalid EtherType ${ethertype}: want an integer in 0x0600-0xffff`);
  }
  const frame = Buffer.alloc(14 + payload.length);
  frame.set(dst, 0);
  frame.set(src, 6);
  frame.writeUInt16BE(ethertype, 12);
  frame.set(payload, 14);
  return frame;
}
