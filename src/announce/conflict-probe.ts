// IPv4 conflict detection before announcing (RFC 5227 probe, on ADD's
// budget): every IPv4 address about to be announced is probed at once, in one
// window of probeMs, with `probes` ARP probes spread over it; whatever ARP
// comes back on the pod's interfaces is classified. An address another host
// answers for is never announced: announcing it would take that host's
// traffic. The window is a pure state machine (ConflictProbe); SteppedPodProbe
// runs it inside one pod (ARP receivers on the probed interfaces, the pod's own
// MACs, probes sent through the pod's packet socket), never blocking: the
// background announcer steps it from its poll loop, ADD from its injected waits.
import type { Logger } from '../log';
import { readFrames, type FrameReceiver } from '../sys/packet-socket';
import { arpProbe, classifyArp, parseArp, type ConflictKind } from '../wire/arp';
import { ETHERTYPE_ARP, formatMac } from '../wire/ethernet';
import { canonicalIP } from '../wire/ip';
import type { CommandContext } from './context';
import { sendEach, type OutgoingFrame } from './round';
import type { AskingInterface, PodSession } from './session';

/** How long to listen, and how many probes to send meanwhile. */
export interface ProbeSettings {
  probeMs: number;
  probes: number;
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
export function probeTargets(frames: readonly OutgoingFrame[]): AskingInterface[] {
  const targets = new Map<number, AskingInterface>();
  for (const { index, name, frame } of frames) {
    const arp = parseArp(frame); // none for an NA
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
  return frames.filter(({ name, frame }) => {
    const address = parseArp(frame)?.senderIp.join('.'); // none for an NA
    return !conflicts.some((c) => c.interface === name && c.address === address);
  });
}

/** `frames` without the conflicting addresses, each logged as left out. */
export function leaveOutConflicts(
  frames: readonly OutgoingFrame[],
  conflicts: readonly AddressConflict[],
  log: Logger,
): OutgoingFrame[] {
  for (const c of conflicts) {
    const fields = { address: c.address, mac: c.mac, interface: c.interface };
    log.warn(`address conflict: not announcing ${describeConflict(c)}`, fields);
  }
  return withoutConflicts(frames, conflicts);
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

/**
 * `interfaces` (a job's, as text, or a round's inputs, as bytes) without the IPv4 addresses that conflict on them:
 * later rounds leave those out too, and they never ask a gateway.
 */
export function dropConflicting<T extends { name: string; ipv4: readonly (string | Uint8Array)[] }>(
  interfaces: readonly T[],
  conflicts: readonly AddressConflict[],
): T[] {
  const text = (ip: string | Uint8Array): string => (typeof ip === 'string' ? canonicalIP(ip) : ip.join('.'));
  return interfaces.map((i) => ({
    ...i,
    ipv4: i.ipv4.filter((ip) => !conflicts.some((c) => c.interface === i.name && c.address === text(ip))),
  }));
}

/** A probe window in progress. Pure: the caller sends what is due, feeds what it receives, and keeps time. */
export class ConflictProbe {
  private readonly end: number;
  private readonly dueTimes: number[];
  private sent = 0;
  private readonly found = new Map<string, AddressConflict>();
  /** How many addresses the window probes. */
  readonly addressCount: number;

  /**
   * A window from `startMs`: probe k of `probes` is due at k × probeMs / probes; it ends after probeMs, or once every
   * address (`stopAtFirst`: one) conflicts.
   */
  constructor(
    private readonly targets: readonly AskingInterface[],
    private readonly ownMacs: readonly Uint8Array[],
    readonly settings: ProbeSettings,
    startMs: number,
    private readonly stopAtFirst = false,
  ) {
    const { probeMs, probes } = settings;
    this.end = startMs + probeMs;
    this.dueTimes = Array.from({ length: probes }, (_, k) => startMs + (k * probeMs) / probes);
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

/** What probing a pod needs from the command (or the announcer) that runs it. */
export type PodProbeDeps = Pick<CommandContext, 'libc' | 'open' | 'closeInBackground'> & { log: Logger };

/**
 * A probe window in one pod, driven by the caller's poll loop, never blocking: the caller polls fds() with the rest
 * of its sockets, calls step() when one is readable or wakeAt() has come, and finish() once step() says the window is
 * over.
 */
export class SteppedPodProbe {
  private released = false;

  private constructor(
    private readonly deps: PodProbeDeps,
    private readonly session: PodSession,
    private readonly receivers: FrameReceiver[],
    private readonly probe: ConflictProbe,
  ) {}

  /**
   * Opens the receivers (before the first probe goes out, so that no answer is missed) and starts a window at `now`
   * (the caller's clock, which step() and wakeAt() then use); undefined when `frames` has no IPv4 address to probe.
   * With `stopAtFirst` the first conflict ends the window.
   */
  static start(
    deps: PodProbeDeps,
    session: PodSession,
    netns: string,
    frames: readonly OutgoingFrame[],
    settings: ProbeSettings,
    now: number,
    stopAtFirst = false,
  ): SteppedPodProbe | undefined {
    const targets = probeTargets(frames);
    if (targets.length === 0) return undefined;
    const ownMacs = session.pod.rtnl.links().flatMap((link) => (link.mac?.length === 6 ? [link.mac] : []));
    const indexes = targets.map((t) => t.index);
    const receivers = deps.open.receivers(netns, indexes, ETHERTYPE_ARP);
    const probe = new ConflictProbe(targets, ownMacs, settings, now, stopAtFirst);
    return new SteppedPodProbe(deps, session, receivers, probe);
  }

  /** The receivers' fds, for the caller's poll. */
  fds(): number[] {
    return this.released ? [] : this.receivers.map((r) => r.fd);
  }

  /**
   * Classifies the ARP queued on the receivers (no wait), sends the probes due by `now` (a failed send is logged: the
   * window goes on); whether the window is over.
   */
  step(now: number): boolean {
    for (const { ifindex, frame } of readFrames(this.deps.libc, this.receivers, 0)) this.probe.receive(ifindex, frame);
    sendEach(this.session.pod.packet, this.probe.due(now), this.deps.log, 'sending an ARP probe failed');
    return this.probe.finished(now);
  }

  /** When step() is next due without ARP arriving: the next probe, or the end of the window. */
  wakeAt(now: number): number {
    return now + this.probe.waitMs(now);
  }

  /** Releases the receivers and returns the conflicts found. */
  finish(): AddressConflict[] {
    const conflicts = this.probe.conflicts();
    this.close();
    const { addressCount: addresses, settings } = this.probe;
    this.deps.log.debug('conflict probe done', { addresses, probes: settings.probes, conflicts: conflicts.length });
    return conflicts;
  }

  /** Releases the receivers (once), the window left unfinished or finished. */
  close(): void {
    if (this.released) return;
    this.released = true;
    for (const r of this.receivers) this.deps.closeInBackground(r.release());
  }
}
