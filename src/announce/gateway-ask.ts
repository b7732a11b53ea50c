// One ask of the gateway check, shared by ADD (gatewayCheck require) and the
// announcer's later asks: which pod addresses ask which routed gateways, the
// receivers that hear the answers (opened before the requests go out), and
// the answers as the verdict counts them (ms from round 1).
import type { Logger } from '../log';
import type { Libc } from '../sys/libc';
import { readFrames, type FrameReceiver, type PacketSocket } from '../sys/packet-socket';
import { ETHERTYPE_ARP, ETHERTYPE_IPV6 } from '../wire/ethernet';
import { ipFamily, parseIPv4, parseIPv6 } from '../wire/ip';
import { GatewayWindow, type GatewayTarget } from './gateway-check';
import type { GatewayReply, RoutedGateway } from './gateway-verdict';
import type { RoundInput } from './readiness';
import type { OutgoingFrame } from './round';
import type { SocketOpener } from './session';

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
  let sent = 0;
  for (const { index, name, frame } of ask.requests) {
    try {
      packet.send(index, frame);
      sent++;
    } catch (err) {
      log.error('sending a gateway check request failed', { interface: name, error: err });
    }
  }
  return sent;
}

/** Feeds what the receivers hold (without waiting) to the window, at `now` (boot ms). */
export function readAsk(libc: Libc, ask: OpenAsk, now: number): void {
  for (const { ifindex, frame } of readFrames(libc, ask.receivers, 0)) ask.window.receive(ifindex, frame, now);
}

/** The ask's answers, each timed from round 1 (`firstRoundAt`, boot ms). */
export function askReplies(ask: OpenAsk, firstRoundAt: number): GatewayReply[] {
  return ask.window.answers().map((a) => ({
    interface: a.interface,
    gateway: a.gateway,
    mac: a.mac,
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
