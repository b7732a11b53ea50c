// A real Linux gateway on a test bridge, for the gateway check (issue 26): a
// netns of its own whose `gw0` holds the gateway's addresses, its veth peer a
// port of the bridge, forwarding on (a router), and pods of the real bridge
// plugin whose static IPAM routes through it.
import { randomBytes } from 'node:crypto';
import { announcerAdd, attachmentOf } from './announcer';
import { announcerFiles, type AnnouncerFiles } from './announcer-files';
import { attachBridgePod, type BridgePod } from './bridge-pods';
import { startCapture } from './capture';
import { announcerStatus } from './daemon';
import type { Frame } from './tshark';
import { waitFor } from './wait';
import type { GatewayVerdict } from '../../../src/announce/gateway-verdict';
import { runOk } from './exec';
import { deleteLink } from './links';
import { neighEntry, type NeighEntry } from './neigh';
import { allocSubnet, uniqueName, type Subnet } from './names';
import { createBridge } from './bridge';
import { createNetns, type Netns } from './netns';
import type { Scope } from './scope';
import { setSysctl } from './sysctl';

/** Rounds of every burst of the gateway tests: round 1 and one more. */
export const BURST = { count: 2, intervalMs: 300 };
const IDLE = { idleExitMs: 500 };

/** The gateway's host number in a test subnet. */
export const GATEWAY_HOST = 254;
/** The gateway's interface inside its netns. */
export const GATEWAY_DEV = 'gw0';

/** A gateway netns on a bridge. */
export interface Gateway {
  netns: Netns;
  mac: string;
  v4: string;
  v6?: string;
  /** Its port on the bridge (the host end of its veth). */
  port: string;
}

/** How createGateway sets the gateway up. */
export interface GatewayOptions {
  prefix: string;
  bridge: string;
  net: Subnet;
  /** An IPv6 address too (host GATEWAY_HOST of the subnet). */
  ip6?: boolean;
  /** Sysctls of the gateway's netns, set before gw0 goes up (`%` stands for gw0). */
  sysctls?: Record<string, string | number>;
  /** Its host number in the subnet. Default GATEWAY_HOST. */
  host?: number;
  /** Its MAC. Default: the kernel's random one. */
  mac?: string;
}

/**
 * A gateway at host GATEWAY_HOST of `net` on `bridge`: arp_accept stays 0 (the kernel's default) unless `sysctls`
 * say otherwise; IPv6 with forwarding on, so its NA carries the router flag.
 */
export async function createGateway(scope: Scope, opts: GatewayOptions): Promise<Gateway> {
  const netns = await createNetns(scope, opts.prefix);
  const port = uniqueName(opts.prefix);
  const ns = netns.name;
  await runOk('ip', ['link', 'add', port, 'type', 'veth', 'peer', 'name', GATEWAY_DEV, 'netns', ns]);
  scope.defer(() => deleteLink(port), `gateway port ${port}`);
  await setSysctl(`net.ipv6.conf.${port}.disable_ipv6`, 1);
  await runOk('ip', ['link', 'set', port, 'master', opts.bridge, 'up']);
  if (opts.mac) await runOk('ip', ['-n', ns, 'link', 'set', GATEWAY_DEV, 'address', opts.mac]);
  const host = opts.host ?? GATEWAY_HOST;
  await setSysctl('net.ipv4.ip_forward', 1, ns);
  if (opts.ip6) await setSysctl('net.ipv6.conf.all.forwarding', 1, ns);
  else await setSysctl(`net.ipv6.conf.${GATEWAY_DEV}.disable_ipv6`, 1, ns);
  for (const [key, value] of Object.entries(opts.sysctls ?? {}))
    await setSysctl(key.replace('%', GATEWAY_DEV), value, ns);
  await runOk('ip', ['-n', ns, 'addr', 'add', opts.net.v4Cidr(host), 'dev', GATEWAY_DEV]);
  if (opts.ip6) await runOk('ip', ['-n', ns, '-6', 'addr', 'add', opts.net.v6Cidr(host), 'dev', GATEWAY_DEV, 'nodad']);
  await runOk('ip', ['-n', ns, 'link', 'set', GATEWAY_DEV, 'up']);
  const { stdout } = await runOk('ip', ['-n', ns, '-j', 'link', 'show', GATEWAY_DEV]);
  const mac = (JSON.parse(stdout) as { address: string }[])[0]!.address;
  const gateway: Gateway = { netns, mac, port, v4: opts.net.v4(host) };
  if (opts.ip6) gateway.v6 = opts.net.v6(host);
  return gateway;
}

/** A fresh subnet, a bridge with the node at host 1 (IPv6 too with `ip6`), and a gateway netns on it. */
export async function gatewayNetwork(
  scope: Scope,
  opts: { prefix: string; ip6?: boolean; sysctls?: Record<string, number> },
): Promise<{ net: Subnet; bridge: string; gw: Gateway }> {
  const net = allocSubnet();
  const v6 = opts.ip6 ? { v6Cidr: net.v6Cidr(1) } : {};
  const bridge = await createBridge(scope, { v4Cidr: net.v4Cidr(1), ...v6, prefix: opts.prefix });
  const gw = await createGateway(scope, { ...opts, bridge, net });
  return { net, bridge, gw };
}

/** The gateway's neighbour entry for `ip` (undefined: none). */
export function gatewayNeigh(gw: Gateway, ip: string): Promise<NeighEntry | undefined> {
  return neighEntry(GATEWAY_DEV, ip, gw.netns.name);
}

/** How routedPod attaches its pod: routed through `via` (default: the gateway) or not at all (`via: null`). */
export interface RoutedPodOptions {
  prefix: string;
  net: Subnet;
  bridge: string;
  /** The next hop of the pod's default routes; null: no route at all (a gateway field alone). */
  via?: { v4: string; v6?: string | undefined } | null;
  ip6?: boolean;
  host?: number;
}

/**
 * A pod of the real bridge plugin on `bridge` whose static IPAM routes 0.0.0.0/0 (and ::/0 with ip6) through `via`;
 * with `via: null` it has a `gateway` field but no route.
 */
export async function routedPod(scope: Scope, opts: RoutedPodOptions): Promise<BridgePod> {
  const host = opts.host ?? 5;
  const gw4 = opts.via === null ? opts.net.v4(GATEWAY_HOST) : (opts.via?.v4 ?? opts.net.v4(GATEWAY_HOST));
  const gw6 = opts.via === null ? opts.net.v6(GATEWAY_HOST) : (opts.via?.v6 ?? opts.net.v6(GATEWAY_HOST));
  const addresses = [{ address: opts.net.v4Cidr(host), gateway: gw4 }];
  const routes = [{ dst: '0.0.0.0/0', gw: gw4 }];
  if (opts.ip6) {
    addresses.push({ address: opts.net.v6Cidr(host), gateway: gw6 });
    routes.push({ dst: '::/0', gw: gw6 });
  }
  const ipam = { type: 'static', addresses, ...(opts.via === null ? {} : { routes }) };
  return attachBridgePod(scope, {
    prefix: opts.prefix,
    net: opts.net,
    bridge: opts.bridge,
    host,
    ...(opts.ip6 ? { ip6: true } : {}),
    containerId: `${opts.prefix}-${randomBytes(3).toString('hex')}`,
    extra: { ipam },
  });
}

/** ARP requests from `mac` for `target` (the check's; never gratuitous). */
export function arpRequestsTo(frames: readonly Frame[], mac: string, target: string): Frame[] {
  return frames.filter((f) => f.eth.src === mac && f.arp?.opcode === 1 && f.arp.targetIp === target);
}

/** Neighbor Solicitations from `mac` for `target`, with a source link-layer option, hop limit 255. */
export function nsTo(frames: readonly Frame[], mac: string, target: string): Frame[] {
  return frames.filter(
    (f) =>
      f.eth.src === mac &&
      f.icmpv6?.type === 135 &&
      f.icmpv6.target === target &&
      f.icmpv6.optionTypes.includes(1) &&
      f.ipv6?.hopLimit === 255,
  );
}

/** The attachment's gateway verdict in `announcer status`, once it is final. */
export async function finalVerdict(files: AnnouncerFiles, containerId: string): Promise<GatewayVerdict> {
  return waitFor(
    async () => {
      const status = await announcerStatus(files.stateDir);
      const mine = status.attachments.find((a) => a.containerId === containerId);
      return mine?.gateway && mine.gateway.result !== 'pending' ? mine.gateway : undefined;
    },
    { what: `a final gateway verdict for ${containerId}`, timeoutMs: 15_000 },
  );
}

/** ADDs the announcer on `pod` with `options`, capturing ARP and ICMPv6 on its port from before: ADD's output. */
export async function addCaptured(scope: Scope, pod: BridgePod, options: Record<string, unknown>) {
  const files = await announcerFiles(scope);
  const capture = await startCapture(scope, { iface: pod.hostVeth, filter: 'arp or icmp6' });
  const att = attachmentOf(pod, files, { options: { ...BURST, ...IDLE, ...options } });
  const add = await announcerAdd(scope, att);
  return { files, capture, att, add };
}

/** Waits until the burst's last round is out and a little more (the last round's window closes). */
export async function burstOver(): Promise<void> {
  await new Promise((r) => setTimeout(r, BURST.intervalMs * (BURST.count - 1) + 1200));
}
