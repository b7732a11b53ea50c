// Pure: turns (options, prevResult, env) into what to announce, how and when.
// Frames are built per round from what is really on the interface then.
import type { AnnounceOptions } from './cni/options';
import { gratuitousArp, type ArpOp } from './wire/arp';
import { deriveMac } from './wire/ethernet';
import { canonicalIP, isIPv6LinkLocal, parseCidr, parseIP } from './wire/ip';
import { unsolicitedNeighborAdvert } from './wire/ndp';

/**
 * The per-attachment options the planner reads; `mac` is `keep` also when the runtime chose the MAC (see
 * resolveOptions): then nothing is derived.
 */
export type PlanOptions = Pick<
  AnnounceOptions,
  'ipv4' | 'ipv6' | 'arpOp' | 'interfaces' | 'mac' | 'macPrefix' | 'count' | 'intervalMs' | 'backoff'
>;

/** prevResult as the planner sees it: interfaces, addresses and routes in result order. */
export interface PlanResult {
  interfaces: readonly { name: string; mac?: string; sandbox?: string }[];
  /** Without a prefix length, an address has no gateway on its link. */
  ips: readonly { address: string; family: 4 | 6; interface?: number; prefixLength?: number; gateway?: string }[];
  /** Absent: no routes. */
  routes?: readonly { dst: string; gw?: string }[];
}

/** Next hops by family, canonical text. */
export type Gateways = { ipv4: string[]; ipv6: string[] };

/** One pod interface to announce. */
export interface InterfacePlan {
  name: string;
  /** Its index in prevResult.interfaces, where the result can report a new MAC. */
  resultIndex: number | undefined;
  /** Every prevResult address of the interface, in order (what CHECK verifies). */
  addresses: string[];
  /** Addresses to announce, in prevResult order. */
  ipv4: string[];
  ipv6: string[];
  /** The IP-derived MAC to set before announcing, when `mac: ip-derived` applies. */
  targetMac: Buffer | undefined;
  /** The next hops prevResult's routes send through this interface, whatever `ipv4` and `ipv6` say. */
  gateways: Gateways;
}

/** Everything ADD (and the background announcer) needs to announce an attachment. */
export interface AnnouncePlan {
  interfaces: InterfacePlan[];
  /** prevResult's host-side interface names: hints for finding veth peers. */
  hostPeerNames: string[];
  arpOps: ArpOp[];
  /** Offsets in ms of each round from the first; length = count. */
  schedule: number[];
}

/** Builds the plan for one attachment. */
export function planAnnouncement(
  options: PlanOptions,
  result: PlanResult,
  env: { netns: string; ifname: string },
): AnnouncePlan {
  const sandboxed = result.interfaces.flatMap((iface, index) =>
    iface.sandbox === env.netns ? [{ name: iface.name, index }] : [],
  );
  // Without a sandboxed interface, the pod interface is CNI_IFNAME, at its unsandboxed entry if there is one.
  const named = result.interfaces.findIndex((i) => i.name === env.ifname && !i.sandbox);
  const pod = sandboxed.length > 0 ? sandboxed : [{ name: env.ifname, index: named >= 0 ? named : undefined }];
  const chosen = options.interfaces ? pod.filter((p) => options.interfaces!.includes(p.name)) : pod;
  const interfaces = chosen.map((p): InterfacePlan => {
    const mine = result.ips.filter((ip) => (ip.interface === undefined ? pod.length === 1 : ip.interface === p.index));
    const first = mine[0];
    return {
      name: p.name,
      resultIndex: p.index,
      addresses: mine.map((ip) => ip.address),
      ipv4: options.ipv4 ? mine.filter((ip) => ip.family === 4).map((ip) => ip.address) : [],
      ipv6: options.ipv6 ? mine.filter((ip) => ip.family === 6).map((ip) => ip.address) : [],
      targetMac: options.mac === 'ip-derived' && first ? deriveMac(options.macPrefix, first.address) : undefined,
      gateways: routedGateways(result.routes ?? [], mine, pod.length === 1),
    };
  });
  return {
    interfaces,
    hostPeerNames: result.interfaces.filter((i) => !i.sandbox).map((i) => i.name),
    arpOps: options.arpOp === 'both' ? ['request', 'reply'] : [options.arpOp],
    schedule: burstSchedule(options.count, options.intervalMs, options.backoff),
  };
}

type PlanIp = PlanResult['ips'][number];
type PlanRoute = NonNullable<PlanResult['routes']>[number];

/**
 * The next hops `routes` send through the pod interface whose addresses are `mine`, deduplicated, in route order:
 * a route's `gw` when one of `mine` has it on link (a link-local IPv6 `gw`: when the pod has `onlyInterface`), or
 * for a route without `gw` the `gateway` of `mine` of the route's family, as ipam.ConfigureIface routes it.
 */
function routedGateways(routes: readonly PlanRoute[], mine: readonly PlanIp[], onlyInterface: boolean): Gateways {
  const gateways: Gateways = { ipv4: [], ipv6: [] };
  for (const route of routes) {
    const hop = route.gw === undefined ? ownGateway(route.dst, mine) : onLinkHop(route.gw, mine, onlyInterface);
    if (!hop) continue;
    const list = hop.family === 4 ? gateways.ipv4 : gateways.ipv6;
    if (!list.includes(hop.text)) list.push(hop.text);
  }
  return gateways;
}

/** An IP address: its family, its bytes and its canonical text. */
type Address = { family: 4 | 6; bytes: Buffer; text: string };

/** The first `gateway` among `mine` of the family of `dst` (first wins, as in ipam.ConfigureIface). */
function ownGateway(dst: string, mine: readonly PlanIp[]): Address | undefined {
  const family = parseCidr(dst)?.family;
  const gateways = mine.map((ip) => (ip.gateway === undefined ? undefined : addressOf(ip.gateway)));
  return gateways.find((gateway) => gateway !== undefined && gateway.family === family);
}

/** `gw` when one of `mine` has it inside its prefix, or it is IPv6 link-local and the pod has `onlyInterface`. */
function onLinkHop(gw: string, mine: readonly PlanIp[], onlyInterface: boolean): Address | undefined {
  const hop = addressOf(gw);
  if (!hop) return undefined;
  if (onlyInterface && hop.family === 6 && isIPv6LinkLocal(hop.bytes)) return hop;
  const onLink = mine.some((ip) => {
    const own = ip.prefixLength === undefined ? undefined : addressOf(ip.address);
    return own?.family === hop.family && samePrefix(own.bytes, hop.bytes, ip.prefixLength!);
  });
  return onLink ? hop : undefined;
}

/** An IP address's family, bytes and canonical text; undefined for anything else or an unspecified address. */
function addressOf(text: string): Address | undefined {
  const bytes = parseIP(text);
  if (bytes === undefined || bytes.every((b) => b === 0)) return undefined;
  return { family: bytes.length === 4 ? 4 : 6, bytes, text: canonicalIP(text) };
}

/** Whether the first `prefixLength` bits of `a` and `b` match. */
function samePrefix(a: Uint8Array, b: Uint8Array, prefixLength: number): boolean {
  for (let bit = 0; bit < prefixLength; bit += 8) {
    const mask = (0xff << (8 - Math.min(8, prefixLength - bit))) & 0xff;
    if ((a[bit / 8]! & mask) !== (b[bit / 8]! & mask)) return false;
  }
  return true;
}

/** The longest a burst may last, from its first round to its last: 10 minutes. */
export const MAX_BURST_SPAN_MS = 10 * 60 * 1000;

/** How long after round 1 the last round comes: Σ intervalMs × backoff^k for k < count - 1 (unrounded). */
export function burstSpanMs(count: number, intervalMs: number, backoff: number): number {
  let span = 0;
  for (let k = 0; k < count - 1; k++) span += intervalMs * backoff ** k;
  return span;
}

/** Round offsets in ms: 0, then gap k = intervalMs × backoff^k between rounds k and k+1. */
export function burstSchedule(count: number, intervalMs: number, backoff: number): number[] {
  return Array.from({ length: count }, (_, k) => Math.round(burstSpanMs(k + 1, intervalMs, backoff)));
}

/** What one round announces on one interface. */
export interface RoundAddresses {
  mac: Uint8Array;
  /** The link has IFF_NOARP: no ARP on it. */
  noarp: boolean;
  ipv4: readonly Uint8Array[];
  ipv6: readonly { bytes: Uint8Array; optimistic: boolean }[];
}

/**
 * One round: a gratuitous ARP per IPv4 address and ARP op, an unsolicited NA per IPv6 one (O clear when optimistic, R
 * set when the pod forwards).
 */
export function roundFrames(round: RoundAddresses, arpOps: readonly ArpOp[], router: boolean): Buffer[] {
  const frames: Buffer[] = [];
  if (!round.noarp) {
    for (const ip of round.ipv4) for (const op of arpOps) frames.push(gratuitousArp({ mac: round.mac, ip, op }));
  }
  for (const { bytes, optimistic } of round.ipv6) {
    frames.push(unsolicitedNeighborAdvert({ mac: round.mac, ip: bytes, router, override: !optimistic }));
  }
  return frames;
}
