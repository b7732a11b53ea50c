// Pure: RFC 5227 §2.1.1 conflict detection, one received ARP packet at a time. No I/O.
import type { ArpPacket } from './arp';

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

const REQUEST = 1;
const REPLY = 2;
const UNSPECIFIED = Buffer.alloc(4);

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
  if (packet.op !== REQUEST && packet.op !== REPLY) return undefined;
  if (ownMacs.some((m) => packet.senderMac.equals(m))) return undefined;
  const claimed = probing.find((a) => packet.senderIp.equals(a));
  if (claimed)
    return {
      address: Buffer.from(claimed),
      mac: Buffer.from(packet.senderMac),
      kind: packet.op === REPLY ? 'reply' : 'request',
    };
  if (packet.op !== REQUEST || !packet.senderIp.equals(UNSPECIFIED)) return undefined;
  const probed = probing.find((a) => packet.targetIp.equals(a));
  return probed ? { address: Buffer.from(probed), mac: Buffer.from(packet.senderMac), kind: 'probe' } : undefined;
}
