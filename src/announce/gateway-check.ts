// The gateway check: after a round, each pod interface asks the gateways it
// routes through for their MAC, from each of its good addresses: an ARP
// request per (IPv4 source, gateway) and a Neighbor Solicitation with the
// source link-layer option per (IPv6 source, gateway). Unlike a gratuitous
// ARP or an unsolicited NA, a request addressed to the gateway makes it create
// or refresh its entry for the pod (RFC 826's merge step, RFC 4861 §7.2.3),
// and the answer proves that the two reach each other. Which MAC answered is
// kept: a proxy-ARP or anycast gateway answers without learning anything.
// The window is a pure state machine, as ConflictProbe is: the caller sends
// the requests, feeds what it receives and keeps time.
import { arpRequest, parseArp } from '../wire/arp';
import { formatIPv6 } from '../wire/ip';
import { formatMac } from '../wire/ethernet';
import { neighborSolicitation, parseNeighborAdvert } from '../wire/ndp';
import type { OutgoingFrame } from './round';

/** What the check does: nothing, ask and report, or ask and make ADD wait for (and fail without) an answer. */
export type GatewayCheckMode = 'off' | 'report' | 'require';

/** One pod interface to ask from: its MAC and good source addresses, and the gateways it routes through. */
export interface GatewayTarget {
  index: number;
  name: string;
  mac: Buffer;
  ipv4: Buffer[];
  ipv6: Buffer[];
  gateways: { ipv4: Buffer[]; ipv6: Buffer[] };
}

/** A gateway that answered: which MAC answered, and when (ms after the window started). */
export interface GatewayAnswer {
  interface: string;
  gateway: string;
  mac: string;
  afterMs: number;
}

const ARP_REPLY = 2;

/** A window of asking each target's gateways. Pure: the caller sends, feeds what it receives, and keeps time. */
export class GatewayWindow {
  private readonly end: number;
  /** Answers by `${target index} ${gateway}`, in the order they came. */
  private readonly found = new Map<string, GatewayAnswer>();
  /** The (interface, gateway) keys that can be asked: those with a source address of the gateway's family. */
  private readonly askable: string[];

  /** A window from `startMs` to `startMs + windowMs`. */
  constructor(
    private readonly targets: readonly GatewayTarget[],
    windowMs: number,
    private readonly startMs: number,
  ) {
    this.end = startMs + windowMs;
    this.askable = targets.flatMap((t) => [
      ...(t.ipv4.length > 0 ? t.gateways.ipv4.map((gw) => key(t, ipv4Text(gw))) : []),
      ...(t.ipv6.length > 0 ? t.gateways.ipv6.map((gw) => key(t, formatIPv6(gw))) : []),
    ]);
  }

  /**
   * One ARP request per (IPv4 source, IPv4 gateway) pair and one NS per (IPv6 source, IPv6 gateway) pair, for the
   * gateways not answered yet; throws RangeError for a bad MAC or address, as the builders do.
   */
  requests(): OutgoingFrame[] {
    const out: OutgoingFrame[] = [];
    for (const t of this.targets) {
      const push = (frame: Buffer): void => void out.push({ index: t.index, name: t.name, frame });
      const v4 = t.gateways.ipv4.filter((gw) => !this.found.has(key(t, ipv4Text(gw))));
      const v6 = t.gateways.ipv6.filter((gw) => !this.found.has(key(t, formatIPv6(gw))));
      for (const ip of t.ipv4) for (const targetIp of v4) push(arpRequest({ mac: t.mac, ip, targetIp }));
      for (const ip of t.ipv6) for (const target of v6) push(neighborSolicitation({ mac: t.mac, ip, target }));
    }
    return out;
  }

  /**
   * Looks at one frame received at `now` on the interface with index `ifindex`: an ARP reply from one of its IPv4
   * gateways to one of its sources, or a solicited NA for one of its IPv6 gateways. The first answer per gateway
   * counts.
   */
  receive(ifindex: number, frame: Uint8Array, now: number): void {
    const target = this.targets.find((t) => t.index === ifindex);
    if (!target) return;
    const answer = answerIn(target, frame);
    if (!answer) return;
    const k = key(target, answer.gateway);
    if (!this.found.has(k)) this.found.set(k, { interface: target.name, ...answer, afterMs: now - this.startMs });
  }

  /** Whether the window is over: every gateway that can be asked answered, or the time is up. */
  finished(now: number): boolean {
    return now >= this.end || this.askable.every((k) => this.found.has(k));
  }

  /** Ms from `now` until the window ends (0 once finished). */
  waitMs(now: number): number {
    return this.finished(now) ? 0 : this.end - now;
  }

  /** The answers so far, one per interface and gateway, in the order they came. */
  answers(): GatewayAnswer[] {
    return [...this.found.values()];
  }

  /** The gateways without an answer (those no source could ask included), by interface, IPv4 first. */
  unanswered(): { interface: string; gateway: string }[] {
    return this.targets.flatMap((t) =>
      [...t.gateways.ipv4.map(ipv4Text), ...t.gateways.ipv6.map(formatIPv6)]
        .filter((gateway) => !this.found.has(key(t, gateway)))
        .map((gateway) => ({ interface: t.name, gateway })),
    );
  }
}

/** The gateway `frame` answers for on `target`, and the MAC it answers with; undefined when it answers nothing. */
function answerIn(target: GatewayTarget, frame: Uint8Array): { gateway: string; mac: string } | undefined {
  const arp = parseArp(frame);
  if (arp) {
    if (arp.op !== ARP_REPLY || !target.ipv4.some((ip) => ip.equals(arp.targetIp))) return undefined;
    const gateway = target.gateways.ipv4.find((gw) => gw.equals(arp.senderIp));
    return gateway && { gateway: ipv4Text(gateway), mac: formatMac(arp.senderMac) };
  }
  const na = parseNeighborAdvert(frame);
  if (!na?.solicited) return undefined;
  const gateway = target.gateways.ipv6.find((gw) => gw.equals(na.target));
  return gateway && { gateway: formatIPv6(gateway), mac: formatMac(na.targetMac ?? na.ethSource) };
}

function key(target: GatewayTarget, gateway: string): string {
  return `${target.index} ${gateway}`;
}

function ipv4Text(ip: Uint8Array): string {
  return ip.join('.');
}
