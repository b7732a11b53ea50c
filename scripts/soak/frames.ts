// The capture's frames the announcer builds, and whose pod each one is. tshark's decoding is the oracle's eye; this
// file only sorts what it saw.
//
// What the announcer builds: gratuitous ARP (sender IP = target IP, either op), the unsolicited NA (ICMPv6 136 to
// 33:33:00:00:00:01, hop limit 255), the conflict probe (ARP with sender IP 0.0.0.0; conflictCheck is off here, so
// one would be a surprise), and the gateway check's asks: an ARP request from the pod's IPv4 address for the
// gateway's, an NS for the gateway's IPv6 address. The pods' kernels' own traffic is left out by kind: MLD and router
// solicitations are not even captured, DAD comes from ::, a kernel resolving the gateway would need traffic, and the
// pods send none. The one kernel frame that looks like the announcer's, the `arp_notify` GARP sent when eth0's MAC
// changes (the bridge plugin turns arp_notify on), is told apart in oracle.ts by MAC and time.
//
// Whose: by the frame's Ethernet source, which names one pod's cycle. A MAC the bridge plugin gave is random, so it
// is one cycle's; an IP-derived MAC is the same for every cycle of a worker (its IP is), and the frame belongs to the
// last of them that had started by the frame's time: a frame sent after a DEL is blamed on the pod deleted, not on
// the worker's next pod.
import { canonicalIp } from '../../test/integration/harness/neigh';
import type { Frame } from '../../test/integration/harness/tshark';
import type { Cycle } from './model';

/** The kinds of frames the announcer builds. */
export type BuiltKind = 'garp' | 'na' | 'gateway arp' | 'gateway ns' | 'probe';

/** One frame the announcer could have built, read from the capture. */
export interface BuiltFrame {
  /** Capture time, wall clock ms. */
  t: number;
  kind: BuiltKind;
  /** The address it is about: the announced or probed one, or the asker's. */
  ip: string;
  /** Ethernet source. */
  mac: string;
  /** Its number in the capture, to find it again with tshark. */
  number: number;
  /** ARP's op, for reports. */
  op?: number;
}

/** The gateway's addresses: an ask is a frame for one of them. */
export interface GatewayIps {
  v4: string;
  v6?: string | undefined;
}

function arpKind(f: Frame, gw: GatewayIps): BuiltFrame | undefined {
  const arp = f.arp!;
  const base = { t: f.time * 1000, mac: f.eth.src, number: f.number, op: arp.opcode };
  if (arp.senderIp === '0.0.0.0') return { ...base, kind: 'probe', ip: arp.targetIp };
  if (arp.senderIp === arp.targetIp) return { ...base, kind: 'garp', ip: arp.senderIp };
  if (arp.opcode === 1 && arp.targetIp === gw.v4) return { ...base, kind: 'gateway arp', ip: arp.senderIp };
  return undefined;
}

function ndKind(f: Frame, gw: GatewayIps): BuiltFrame | undefined {
  const { icmpv6, ipv6 } = f;
  if (!icmpv6 || !ipv6) return undefined;
  const base = { t: f.time * 1000, mac: f.eth.src, number: f.number };
  const target = canonicalIp(icmpv6.target ?? '');
  if (icmpv6.type === 136 && f.eth.dst === '33:33:00:00:00:01' && ipv6.hopLimit === 255)
    return { ...base, kind: 'na', ip: target };
  const fromUnspecified = canonicalIp(ipv6.src) === '::';
  if (icmpv6.type === 135 && gw.v6 !== undefined && target === canonicalIp(gw.v6) && !fromUnspecified)
    return { ...base, kind: 'gateway ns', ip: canonicalIp(ipv6.src) };
  return undefined;
}

/** The frame as one the announcer could have built, or undefined. */
export function builtFrame(f: Frame, gw: GatewayIps): BuiltFrame | undefined {
  if (f.arp) return arpKind(f, gw);
  return ndKind(f, gw);
}

/** Each cycle's frames (by MAC and time), and the built-looking frames of pod MACs no cycle had by then. */
export function framesByCycle(
  frames: readonly Frame[],
  cycles: readonly Cycle[],
  gw: GatewayIps,
): { of: Map<Cycle, BuiltFrame[]>; unplaced: BuiltFrame[] } {
  const byMac = new Map<string, Cycle[]>();
  const add = (mac: string | undefined, c: Cycle): void => {
    if (mac === undefined) return;
    const list = byMac.get(mac) ?? [];
    if (!list.includes(c)) list.push(c);
    byMac.set(mac, list);
  };
  for (const c of cycles) {
    add(c.originalMac, c);
    add(c.derivedMac, c);
  }
  for (const list of byMac.values()) list.sort((a, b) => a.start - b.start);
  const of = new Map<Cycle, BuiltFrame[]>(cycles.map((c) => [c, []]));
  const unplaced: BuiltFrame[] = [];
  for (const f of frames) {
    const built = builtFrame(f, gw);
    const candidates = built && byMac.get(built.mac);
    if (!built || !candidates) continue;
    const owner = candidates.filter((c) => c.start <= built.t).at(-1);
    if (owner) of.get(owner)!.push(built);
    else unplaced.push(built);
  }
  return { of, unplaced };
}
