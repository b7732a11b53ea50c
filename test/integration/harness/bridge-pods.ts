// Pods the real bridge plugin attaches to a Linux bridge of the host, as a
// runtime attaches them: on a bridge of their own, or on a shared one that a
// keeper pod holds up. Tests, `make demo` and `make bench` build pods here.
import { randomBytes } from 'node:crypto';
import { createBridge } from './bridge';
import { addBridgePod, bridgeConfig, chainConfig, hostVeth, podInterface } from './cni';
import { runOk } from './exec';
import { linkShow } from './links';
import { OLD_MAC, plantStale } from './neigh';
import { allocSubnet, type Subnet } from './names';
import { createNetns, type Netns } from './netns';
import { routesOverlapping } from './routes';
import type { Scope } from './scope';
import { waitFor } from './wait';

/** The state of a bridge port (`forwarding`, `disabled`…), from `bridge -j link`. */
export async function portState(dev: string): Promise<string | undefined> {
  const { stdout } = await runOk('bridge', ['-j', 'link', 'show', 'dev', dev]);
  return (JSON.parse(stdout) as { state?: string }[])[0]?.state;
}

/** How attachBridgePod attaches a pod. */
export interface AttachPodOptions {
  /** Name prefix of the pod's netns (≤ 9 chars). */
  prefix: string;
  net: Subnet;
  bridge: string;
  /** The pod's host number in `net`; the node, its gateway, is host 1. Default 5. */
  host?: number;
  /** An IPv6 address too (the node's as gateway). */
  ip6?: boolean;
  /** Default `<prefix>-<6 random hex>`. */
  containerId?: string;
  /** The network name. Default `harness`. */
  name?: string;
  /** The bridge plugin's cniVersion. Default 1.0.0. */
  cniVersion?: string;
  /** CNI_ARGS for the bridge plugin. */
  args?: string;
  /** Extra bridge-plugin fields (e.g. `capabilities` and `runtimeConfig`, or an `ipam` of its own). */
  extra?: Record<string, unknown>;
  /**
   * Wait until the pod's eth0 is up and its bridge port forwards. Default
   * false: the announcer's own wait for them is often what a test is about.
   */
  settle?: boolean;
}

/** A pod the real bridge plugin attached to a bridge. */
export interface BridgePod {
  net: Subnet;
  bridge: string;
  netns: Netns;
  containerId: string;
  /** The bridge plugin's config: its `name` and `cniVersion` chain into the announcer's. */
  conf: ReturnType<typeof bridgeConfig>;
  /** The bridge plugin's ADD result: the announcer's prevResult. */
  result: any;
  /** The pod's IPv4 address, without the prefix length. */
  ip: string;
  /** The MAC the bridge plugin gave the pod's eth0. */
  mac: string;
  /** The host end of the pod's veth: its bridge port. */
  hostVeth: string;
  /** CNI_IFNAME of the attachment. */
  ifname: 'eth0';
  /** How long the bridge plugin's ADD took, ms (wall clock). */
  addMs: number;
  /** The stdin a runtime gives a plugin chained after the bridge plugin, with `pluginConf`. */
  chained(pluginConf: object): Record<string, unknown>;
}

/** ADDs a pod (a netns of its own) to `bridge` through the real bridge plugin; its DEL and netns go at scope close. */
export async function attachBridgePod(scope: Scope, opts: AttachPodOptions): Promise<BridgePod> {
  const { net, bridge } = opts;
  const host = opts.host ?? 5;
  const netns = await createNetns(scope, opts.prefix);
  const containerId = opts.containerId ?? `${opts.prefix}-${randomBytes(3).toString('hex')}`;
  const podOpts = {
    bridge,
    ip: net.v4Cidr(host),
    gw: net.v4(1),
    ...(opts.ip6 ? { ip6: net.v6Cidr(host), gw6: net.v6(1) } : {}),
    ...(opts.name === undefined ? {} : { name: opts.name }),
    ...(opts.cniVersion === undefined ? {} : { cniVersion: opts.cniVersion }),
    ...(opts.extra === undefined ? {} : { extra: opts.extra }),
  };
  const t0 = Date.now();
  const result = await addBridgePod(scope, {
    ...podOpts,
    netns: netns.path,
    containerId,
    ...(opts.args === undefined ? {} : { args: opts.args }),
  });
  const addMs = Date.now() - t0;
  const pod = podInterface(result);
  const port = hostVeth(result, bridge);
  if (pod?.sandbox !== netns.path || !port)
    throw new Error(`bridge result without the pod's or the host's interface: ${JSON.stringify(result)}`);
  if (opts.settle) {
    await waitFor(async () => (await linkShow('eth0', netns.name))?.operstate === 'UP', {
      what: `eth0 of ${netns.name} up`,
    });
    await waitFor(async () => (await portState(port.name)) === 'forwarding', { what: `port ${port.name} forwarding` });
  }
  const conf = bridgeConfig(podOpts);
  return {
    net,
    bridge,
    netns,
    containerId,
    conf,
    result,
    ip: net.v4(host),
    mac: pod.mac,
    hostVeth: port.name,
    ifname: 'eth0',
    addMs,
    chained: (pluginConf) => chainConfig(conf, pluginConf, result),
  };
}

/** A fresh subnet and bridge (the node at host 1, IPv6 too with `ip6`), and one pod on it (attachBridgePod). */
export async function createBridgePod(
  scope: Scope,
  opts: Omit<AttachPodOptions, 'net' | 'bridge'>,
): Promise<BridgePod> {
  const net = allocSubnet();
  const bridge = await createBridge(scope, {
    v4Cidr: net.v4Cidr(1),
    ...(opts.ip6 ? { v6Cidr: net.v6Cidr(1) } : {}),
    prefix: opts.prefix,
  });
  return attachBridgePod(scope, { ...opts, net, bridge });
}

/**
 * A bridge with the node's address (host 1, IPv6 too with `ip6`) and a keeper
 * pod (host 9) on it, so that the bridge keeps its carrier while other pods
 * come and go: losing it would flush the bridge's neighbour entries.
 */
export async function bridgeWithKeeper(
  scope: Scope,
  net: Subnet,
  opts: { prefix: string; ip6?: boolean },
): Promise<string> {
  const bridge = await createBridge(scope, {
    v4Cidr: net.v4Cidr(1),
    ...(opts.ip6 ? { v6Cidr: net.v6Cidr(1) } : {}),
    prefix: opts.prefix,
  });
  await attachBridgePod(scope, {
    prefix: opts.prefix,
    net,
    bridge,
    host: 9,
    containerId: `${opts.prefix}-keeper-${randomBytes(3).toString('hex')}`,
  });
  return bridge;
}

/** How many subnets createPodNetwork tries before it gives up on finding one the node does not use. */
const SUBNET_TRIES = 10;

/** A bridge on the node holding .1 of a subnet of its own, for pods of network `name`. */
export interface PodNetwork {
  bridge: string;
  net: Subnet;
  name: string;
}

/**
 * Creates a bridge `<prefix><random>` with .1 of a subnet that no route of the
 * node covers or lies in, so that the node's own traffic is never drawn onto
 * it (`make demo` runs on any machine). Deleted at scope close.
 */
export async function createPodNetwork(scope: Scope, prefix: string): Promise<PodNetwork> {
  for (let i = 0; i < SUBNET_TRIES; i++) {
    const net = allocSubnet();
    if ((await routesOverlapping(`${net.v4(0)}/24`)).length > 0) continue;
    const bridge = await createBridge(scope, { v4Cidr: net.v4Cidr(1), prefix });
    return { bridge, net, name: `${prefix}-net` };
  }
  throw new Error(`no free subnet: the node routes each of the ${SUBNET_TRIES} 10.88.N.0/24 tried`);
}

/** How stalePod sets up the bug: on `bridge` of `net` (default: a fresh one with a keeper), dual stack with `ip6`. */
export interface StalePodOptions {
  prefix: string;
  net?: Subnet;
  bridge?: string;
  containerId?: string;
  ip6?: boolean;
}

/**
 * The README's stale-entry bug, set up: the node's entries for the pod's addresses (.5) planted STALE with OLD_MAC,
 * then the pod ADDed through the real bridge plugin, which leaves them so.
 */
export async function stalePod(scope: Scope, opts: StalePodOptions): Promise<BridgePod> {
  const { prefix, ip6 = false } = opts;
  const net = opts.net ?? allocSubnet();
  const bridge = opts.bridge ?? (await bridgeWithKeeper(scope, net, { prefix, ip6 }));
  await plantStale(bridge, net.v4(5), OLD_MAC);
  if (ip6) await plantStale(bridge, net.v6(5), OLD_MAC);
  const id = opts.containerId === undefined ? {} : { containerId: opts.containerId };
  return attachBridgePod(scope, { prefix, net, bridge, ip6, ...id });
}
