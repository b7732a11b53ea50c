// One ask of the gateway check, shared by ADD (gatewayCheck require) and the announcer's later asks. After a round,
// each pod interface asks the gateways it routes through for their MAC, from each of its good addresses: an ARP
// request per (IPv4 source, gateway) and a Neighbor Solicitation with the source link-layer option per (IPv6 source,
// gateway). Unlike a gratuitous ARP or an unsolicited NA, a request addressed to the gateway makes it create or
// refresh its entry for the pod (RFC 826's merge step, RFC 4861 §7.2.3), and the answer proves that the two reach
// each other. Which MAC answered is kept: a proxy-ARP or anycast gateway answers without learning anything.
// The window (GatewayWindow) is a pure state machine, as ConflictProbe is: the caller sends the requests, feeds what
// it receives and keeps time. Around it: which pod addresses ask which gateways, the receivers that hear the answers
// (opened before the requests go out), and the answers as the verdict counts them (ms from round 1).
import type { Logger } from '../log';
import type { Libc } from '../sys/libc';
import { readFrames, type FrameReceiver, type PacketSocket } from '../sys/packet-socket';
import { arpRequest, parseArp } from '../wire/arp';
import { ETHERTYPE_ARP, ETHERTYPE_IPV6, formatMac } from '../wire/ethernet';
import { formatIPv6, ipFamily, parseIPv4, parseIPv6 } from '../wire/ip';
import { neighborSolicitation, parseNeighborAdvert } from '../wire/ndp';
import type { GatewayReply, RoutedGateway } from './gateway-verdict';
import { sendEach, type OutgoingFrame } from './round';
import type { AskingInterface, RoundInput, SocketOpener } from './session';

/** One pod interface to ask from: its MAC and good source addresses, and the gateways it routes through. */
export interface GatewayTarget extends AskingInterface {
  ipv6: Buffer[];
  gateways: { ipv4: Buffer[]; ipv6: Buffer[] };
}

const ARP_REPLY = 2;

/** A window of asking each target's gateways. Pure: the caller sends, feeds what it receives, and keeps time. */
export class GatewayWindow {
  private readonly end: number;
  /** Answers by `${target index} ${gateway}`, in the order they came. */
  private readonly found = new Map<string, GatewayReply>();
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
      ...(t.ipv4.length > 0 ? t.gateways.ipv4.map((gw) => key(t, gw.join('.'))) : []),
      ...(t.ipv6.length > 0 ? t.gateways.ipv6.map((gw) => key(t, formatIPv6(gw))) : []),
    ]);
  }

  /**
   * One ARP request per (IPv4 source, IPv4 gateway) pair and one NS per (IPv6 source, IPv6 gateway) pair: what the
   * window's one ask sends. Throws RangeError for a bad MAC or address, as the builders do.
   */
  requests(): OutgoingFrame[] {
    const out: OutgoingFrame[] = [];
    for (const { index, name, mac, ipv4, ipv6, gateways } of this.targets) {
      const push = (frame: Buffer): void => void out.push({ index, name, frame });
      for (const ip of ipv4) for (const targetIp of gateways.ipv4) push(arpRequest({ mac, ip, targetIp }));
      for (const ip of ipv6) for (const target of gateways.ipv6) push(neighborSolicitation({ mac, ip, target }));
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
  answers(): GatewayReply[] {
    return [...this.found.values()];
  }
}

/** The gateway `frame` answers for on `target`, and the MAC it answers with; undefined when it answers nothing. */
function answerIn(target: GatewayTarget, frame: Uint8Array): { gateway: string; mac: string } | undefined {
  const arp = parseArp(frame);
  if (arp) {
    if (arp.op !== ARP_REPLY || !target.ipv4.some((ip) => ip.equals(arp.targetIp))) return undefined;
    const gateway = target.gateways.ipv4.find((gw) => gw.equals(arp.senderIp));
    return gateway && { gateway: gateway.join('.'), mac: formatMac(arp.senderMac) };
  }
  const na = parseNeighborAdvert(frame);
  if (!na?.solicited) return undefined;
  const gateway = target.gateways.ipv6.find((gw) => gw.equals(na.target));
  return gateway && { gateway: formatIPv6(gateway), mac: formatMac(na.targetMac ?? na.ethSource) };
}

function key(target: GatewayTarget, gateway: string): string {
  return `${target.index} ${gateway}`;
}

/** An ask in progress: its window, its receivers, and when it started (boot ms). */
export interface OpenAsk {
  window: GatewayWindow;
  receivers: FrameReceiver[];
  startedAt: number;
  /** The ARP requests and NSes it sends, built once. */
  requests: OutgoingFrame[];
}

/**
 * What each interface asks from: its current MAC and the addresses a round would announce now (never a tentative,
 * optimistic or DAD-failed one, nor one the conflict probe left out: `inputs` hold none of those, but optimistic IPv6
 * addresses, dropped here), with the `gateways` not answered yet. An interface without a source and a gateway of one
 * family asks nothing in it; IFF_NOARP interfaces ask nothing over ARP.
 */
export function gatewayTargets(inputs: readonly RoundInput[], gateways: readonly RoutedGateway[]): GatewayTarget[] {
  return inputs.flatMap((input) => {
    const mine = gateways.filter((g) => g.interface === input.name).map((g) => g.gateway);
    const v4 = input.noarp ? [] : mine.filter((g) => ipFamily(g) === 4).map(parseIPv4);
    const v6 = mine.filter((g) => ipFamily(g) === 6).map(parseIPv6);
    const ipv4 = v4.length > 0 ? input.ipv4 : [];
    const ipv6 = v6.length > 0 ? input.ipv6.filter((a) => !a.optimistic).map((a) => a.bytes) : [];
    if (ipv4.length + ipv6.length === 0) return [];
    const target: GatewayTarget = {
      index: input.index,
      name: input.name,
      mac: input.mac,
      ipv4,
      ipv6,
      gateways: { ipv4: ipv4.length > 0 ? v4 : [], ipv6: ipv6.length > 0 ? v6 : [] },
    };
    return [target];
  });
}

/**
 * The most frames one ask sends from `interfaces` (a job's, with the addresses it announces): one per (source address,
 * unanswered gateway) of the same family.
 */
export function plannedRequests(
  interfaces: readonly { name: string; ipv4: readonly string[]; ipv6: readonly string[] }[],
  unanswered: readonly RoutedGateway[],
): number {
  return interfaces.reduce((n, i) => {
    const mine = unanswered.filter((g) => g.interface === i.name);
    const v4 = mine.filter((g) => ipFamily(g.gateway) === 4).length;
    return n + i.ipv4.length * v4 + i.ipv6.length * (mine.length - v4);
  }, 0);
}

/**
 * Opens the receivers of an ask from `targets` in the pod's netns (ARP where an interface asks over IPv4, IPv6 where
 * over IPv6): undefined when no target asks anything.
 */
export function openAsk(
  open: SocketOpener,
  netns: string,
  targets: readonly GatewayTarget[],
  windowMs: number,
  startedAt: number,
): OpenAsk | undefined {
  const window = new GatewayWindow(targets, windowMs, startedAt);
  const requests = window.requests();
  if (requests.length === 0) return undefined;
  const v4 = targets.filter((t) => t.gateways.ipv4.length > 0).map((t) => t.index);
  const v6 = targets.filter((t) => t.gateways.ipv6.length > 0).map((t) => t.index);
  const receivers = v4.length > 0 ? open.receivers(netns, v4, ETHERTYPE_ARP) : [];
  try {
    if (v6.length > 0) receivers.push(...open.receivers(netns, v6, ETHERTYPE_IPV6));
  } catch (err) {
    for (const r of receivers) r.close();
    throw err;
  }
  return { window, receivers, startedAt, requests };
}

/** Sends the ask's requests out of the pod; returns how many went out (a failed send is logged). */
export function sendAsk(packet: PacketSocket, ask: OpenAsk, log: Logger): number {
  return sendEach(packet, ask.requests, log, 'sending a gateway check request failed').length;
}

/** Feeds what the receivers hold (without waiting) to the window, at `now` (boot ms). */
export function readAsk(libc: Libc, ask: OpenAsk, now: number): void {
  for (const { ifindex, frame } of readFrames(libc, ask.receivers, 0)) ask.window.receive(ifindex, frame, now);
}

/** The ask's answers, each timed from round 1 (`firstRoundAt`, boot ms). */
export function askReplies(ask: OpenAsk, firstRoundAt: number): GatewayReply[] {
  return ask.window.answers().map((a) => ({
    ...a,
    afterMs: Math.max(0, Math.round(ask.startedAt + a.afterMs - firstRoundAt)),
  }));
}

/** The fds to poll while the ask's window is open. */
export function askFds(ask: OpenAsk): number[] {
  return ask.receivers.map((r) => r.fd);
}

/** Gives up the ask's receivers without closing them: their fds, to be closed on another thread. */
export function releaseAsk(ask: OpenAsk): number[] {
  return ask.receivers.splice(0).map((r) => r.release());
}
