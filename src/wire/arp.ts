// Pure: gratuitous ARP frames (RFC 5227 announcement and the reply form). No I/O.
import { BROADCAST_MAC } from './mac';
import { ETHERTYPE_ARP, ethernetFrame } from './ethernet';
import { expectLength } from './length';

/** Which gratuitous ARP form to build: op 1 announcement or op 2 reply. */
export type ArpOp = 'request' | 'reply';

const HTYPE_ETHERNET = 1;
const PTYPE_IPV4 = 0x0800;
const OPCODE: Record<ArpOp, number> = { request: 1, reply: 2 };

/** Builds a 42-byte broadcast gratuitous ARP frame announcing `ip` at `mac`. */
export function gratuitousArp(opts: { mac: Uint8Array; ip: Uint8Array; op: ArpOp }): Buffer {
  const { mac, ip, op } = opts;
  expectLength(mac, 6, 'ARP sender MAC');
  expectLength(ip, 4, 'ARP sender IPv4 address');
  const opcode = OPCODE[op];
  if (opcode === undefined) {
    throw new RangeError(`invalid ARP op "${String(op)}": want "request" or "reply"`);
  }
  const arp = Buffer.alloc(28);
  arp.writeUInt16BE(HTYPE_ETHERNET, 0);
  arp.writeUInt16BE(PTYPE_IPV4, 2);
  arp[4] = 6; // hlen
  arp[5] = 4; // plen
  arp.writeUInt16BE(opcode, 6);
  arp.set(mac, 8); // sha
  arp.set(ip, 14); // spa
  // tha: zero for the RFC 5227 announcement, sha for the reply form (Linux needs tha == sha there).
  if (op === 'reply') arp.set(mac, 18);
  arp.set(ip, 24); // tpa == spa makes it gratuitous
  return ethernetFrame(BROADCAST_MAC, mac, ETHERTYPE_ARP, arp);
}
