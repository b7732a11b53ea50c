// IPv4 conflict detection before announcing (RFC 5227 probe, on ADD's
// budget): every IPv4 address about to be announced is probed at once, in one
// window of probeMs, with `probes` ARP probes spread over it; whatever ARP
// comes back on the pod's interfaces is classified. An address another host
// answers for is never announced: announcing it would take that host's
// traffic. The window is a pure state machine (ConflictProbe) so that a
// caller can drive it from its own loop (SteppedPodProbe, probe-pod.ts).
import type { Logger } from '../log';
import { arpProbe, classifyArp, parseArp, type ConflictKind } from '../wire/arp';
import { ETHERTYPE_ARP, formatMac } from '../wire/ethernet';
import { canonicalIP } from '../wire/ip';
import type { OutgoingFrame } from './round';

/** How long to listen, and how many probes to send meanwhile. */
export interface ProbeSettings {
  probeMs: number;
  probes: number;
}

/** One interface to probe from: its MAC and the IPv4 addresses about to be announced on it. */
export interface ProbeTarget {
  index: number;
  name: string;
  mac: Buffer;
  ipv4: Buffer[];
}

/** An address another host uses or claims. */
export interface AddressConflict {
  /** The address, dotted quad. */
  address: string;
  /** The other host's MAC (the ARP sender MAC). */
  mac: string;
  /** The pod interface it was seen on. */
  interface: string;
  kind: ConflictKind;
}

/**
 * The interface, MAC and address of each gratuitous ARP frame of a round (NOARP and IPv6-only interfaces have none to
 * probe).
 */
export function probeTargets(frames: readonly OutgoingFrame[]): ProbeTarget[] {
  const targets = new Map<number, ProbeTarget>();
  for (const { index, name, frame } of frames) {
    if (frame.readUInt16BE(12) !== ETHERTYPE_ARP) continue;
    const arp = parseArp(frame);
    if (!arp) continue;
    const target = targets.get(index) ?? { index, name, mac: arp.senderMac, ipv4: [] };
    if (!target.ipv4.some((a) => a.equals(arp.senderIp))) target.ipv4.push(arp.senderIp);
    targets.set(index, target);
  }
  return [...targets.values()];
}

/** `frames` without the gratuitous ARP frames of conflicting addresses (on the interface they were seen on). */
export function withoutConflicts(
  frames: readonly OutgoingFrame[],
  conflicts: readonly AddressConflict[],
): OutgoingFrame[] {
  if (conflicts.length === 0) return [...frames];
  return frames.filter(({ name, frame }) => {
    if (frame.readUInt16BE(12) !== ETHERTYPE_ARP) return true;
    const address = parseArp(frame)?.senderIp.join('.');
    return !conflicts.some((c) => c.interface === name && c.address === address);
  });
}

const HOW_SEEN: Record<ConflictKind, string> = {
  reply: 'it answered ARP for that address',
  request: 'it sent ARP from that address',
  probe: 'it is probing for that address itself',
};

/**
 * One conflict in words, e.g. `10.88.0.5 is in use by the host with MAC 52:54:00:12:34:56 (it answered ARP for that
 * address on eth0)`.
 */
export function describeConflict(c: AddressConflict): string {
  return `${c.address} is in use by the host with MAC ${c.mac} (${HOW_SEEN[c.kind]} on ${c.interface})`;
}

/** `interfaces` (a job's) without the IPv4 addresses that conflict on them: later rounds leave those out too. */
export function dropConflicting<T extends { name: string; ipv4: readonly string[] }>(
  interfaces: readonly T[],
  conflicts: readonly AddressConflict[],
): T[] {
  return interfaces.map((i) => ({
    ...i,
    ipv4: i.ipv4.filter((text) => !conflicts.some((c) => c.interface === i.name && c.address === canonicalIP(text))),
  }));
}

/** A probe window in progress. Pure: the caller sends what is due, feeds what it receives, and keeps time. */
export class ConflictProbe {
  private readonly end: number;
  private readonly dueTimes: number[];
  private sent = 0;
  private readonly found = new Map<string, AddressConflict>();
  private readonly addressCount: number;

  /**
   * A window from `startMs`: probe k of `probes` is due at k × probeMs / probes; it ends after probeMs, or once every
   * address (`stopAtFirst`: one) conflicts.
   */
  constructor(
    private readonly targets: readonly ProbeTarget[],
    private readonly ownMacs: readonly Uint8Array[],
    settings: ProbeSettings,
    startMs: number,
    private readonly stopAtFirst = false,
  ) {
    this.end = startMs + settings.probeMs;
    this.dueTimes = Array.from(
      { length: settings.probes },
      (_, k) => startMs + (k * settings.probeMs) / settings.probes,
    );
    this.addressCount = targets.reduce((n, t) => n + t.ipv4.length, 0);
  }

  /** The probe frames due by `now` and not yet handed out: one per address per probe. */
  due(now: number): OutgoingFrame[] {
    const out: OutgoingFrame[] = [];
    while (this.sent < this.dueTimes.length && this.dueTimes[this.sent]! <= now && !this.finished(now)) {
      this.sent++;
      for (const t of this.targets)
        for (const ip of t.ipv4) out.push({ index: t.index, name: t.name, frame: arpProbe({ mac: t.mac, ip }) });
    }
    return out;
  }

  /** Looks at one frame received on the interface with index `ifindex`. */
  receive(ifindex: number, frame: Uint8Array): void {
    const target = this.targets.find((t) => t.index === ifindex);
    const packet = target && parseArp(frame);
    if (!target || !packet) return;
    const conflict = classifyArp(packet, target.ipv4, this.ownMacs);
    if (!conflict) return;
    const address = conflict.address.join('.');
    const key = `${target.name} ${address}`;
    if (!this.found.has(key))
      this.found.set(key, { address, mac: formatMac(conflict.mac), interface: target.name, kind: conflict.kind });
  }

  /** Whether the window is over: its time is up, or nothing is left to learn. */
  finished(now: number): boolean {
    if (this.addressCount === 0 || now >= this.end) return true;
    return this.stopAtFirst ? this.found.size > 0 : this.found.size >= this.addressCount;
  }

  /** Ms from `now` until the next probe is due or the window ends (0 once finished). */
  waitMs(now: number): number {
    if (this.finished(now)) return 0;
    const next = this.sent < this.dueTimes.length ? Math.min(this.dueTimes[this.sent]!, this.end) : this.end;
    return Math.max(0, next - now);
  }

  /** The conflicts found so far, one per interface and address, in the order they were seen. */
  conflicts(): AddressConflict[] {
    return [...this.found.values()];
  }
}

/** Sends the probes of `probe` due at `now` through `send`; a failed send is logged (the window goes on). */
export function sendDueProbes(
  probe: ConflictProbe,
  now: number,
  send: (index: number, frame: Buffer) => void,
  log: Logger,
): void {
  for (const { index, name, frame } of probe.due(now)) {
    try {
      send(index, frame);
    } catch (err) {
      log.error('sending an ARP probe failed', { interface: name, error: err });
    }
  }
}
