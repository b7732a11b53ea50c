// Pure: turns (options, prevResult, env) into what to announce, how and when.
// Frames are built per round from what is really on the interface then.
import type { ArpOpOption, MacMode } from './cni/option-schema';
import { gratuitousArp, type ArpOp } from './wire/arp';
import { deriveMac, parseMacPrefix } from './wire/derive-mac';
import { unsolicitedNeighborAdvert } from './wire/ndp';

/** The per-attachment options the planner reads. */
export interface PlanOptions {
  ipv4: boolean;
  ipv6: boolean;
  arpOp: ArpOpOption;
  interfaces?: readonly string[] | undefined;
  /** `keep` also when the runtime chose the MAC (see resolveOptions): then nothing is derived. */
  mac: MacMode;
  macPrefix: string;
  count: number;
  intervalMs: number;
  backoff: number;
}

/** prevResult as the planner sees it: interfaces and addresses in result order. */
export interface PlanResult {
  interfaces: readonly { name: string; mac?: string | undefined; sandbox?: string | undefined }[];
  ips: readonly { address: string; family: 4 | 6; interface?: number | undefined }[];
}

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
  const pod =
    sandboxed.length > 0
      ? sandboxed
      : [
          {
            name: env.ifname,
            index: indexOrUndefined(result.interfaces.findIndex((i) => i.name === env.ifname && !i.sandbox)),
          },
        ];
  const chosen = options.interfaces ? pod.filter((p) => options.interfaces!.includes(p.name)) : pod;
  const prefix = options.mac === 'ip-derived' ? parseMacPrefix(options.macPrefix) : undefined;
  const interfaces = chosen.map((p): InterfacePlan => {
    const mine = result.ips.filter((ip) => (ip.interface === undefined ? pod.length === 1 : ip.interface === p.index));
    const first = mine[0];
    return {
      name: p.name,
      resultIndex: p.index,
      addresses: mine.map((ip) => ip.address),
      ipv4: options.ipv4 ? mine.filter((ip) => ip.family === 4).map((ip) => ip.address) : [],
      ipv6: options.ipv6 ? mine.filter((ip) => ip.family === 6).map((ip) => ip.address) : [],
      targetMac: prefix && first ? deriveMac(prefix, first.address) : undefined,
    };
  });
  return {
    interfaces,
    hostPeerNames: result.interfaces.filter((i) => !i.sandbox).map((i) => i.name),
    arpOps: options.arpOp === 'both' ? ['request', 'reply'] : [options.arpOp],
    schedule: burstSchedule(options.count, options.intervalMs, options.backoff),
  };
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
  const offsets: number[] = [];
  let at = 0;
  for (let k = 0; k < count; k++) {
    offsets.push(Math.round(at));
    at += intervalMs * backoff ** k;
  }
  return offsets;
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

function indexOrUndefined(i: number): number | undefined {
  return i >= 0 ? i : undefined;
}
