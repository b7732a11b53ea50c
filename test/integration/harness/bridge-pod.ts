// Pods on a throwaway bridge, attached by the real bridge plugin (static IPAM)
// the way a runtime attaches them: the setup of `make demo` and `make bench`,
// usable by tests too. Everything is undone when the given Scope closes.
import { createBridge } from './bridge';
import { addBridgePod, bridgeConfig, chainConfig } from './cni';
import { linkShow } from './links';
import { allocSubnet, type Subnet } from './names';
import { createNetns, type Netns } from './netns';
import { routesOverlapping } from './routes';
import type { Scope } from './scope';

/** A bridge on the node, holding address .1 of a subnet of its own. */
export interface PodNetwork {
  bridge: string;
  net: Subnet;
  /** The network's `name` in the plugins' config. */
  name: string;
}

/** A pod attached to a PodNetwork by the real bridge plugin. */
export interface BridgePod {
  bridge: string;
  /** The pod's netns (name for `ip -n`, path for CNI_NETNS). */
  netns: Netns;
  /** CNI_CONTAINERID of the attachment: the netns name, unique per run. */
  containerId: string;
  /** CNI_IFNAME inside the pod. */
  ifname: string;
  /** The pod's IPv4 address, without prefix length. */
  ip: string;
  /** The MAC of the pod's interface, read from the link. */
  mac: string;
  /** How long the bridge plugin's ADD took, ms (wall clock). */
  addMs: number;
  /** The bridge plugin's config (network `name`, `cniVersion`). */
  bridgeConf: { name: string; cniVersion: string; [key: string]: unknown };
  /** The bridge plugin's ADD result, the prevResult of a chained plugin. */
  prevResult: unknown;
  /** The stdin a runtime gives a chained plugin with `pluginConf` after the bridge. */
  chained(pluginConf: object): Record<string, unknown>;
}

/** How many subnets createPodNetwork tries before it gives up on finding one the node does not use. */
const SUBNET_TRIES = 10;

/**
 * Creates a bridge `<prefix><random>` (STP off, explicit MAC, IPv4 only) with
 * .1 of a subnet that no route of the node covers or lies in, so that the
 * node's own traffic is never drawn onto it. Deleted at scope close.
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

/**
 * Creates a netns `<prefix><random>` and ADDs its pod to the network through
 * /usr/lib/cni/bridge with address .host; the bridge DEL, then the netns, are
 * undone at scope close.
 */
export async function attachPod(scope: Scope, network: PodNetwork, host: number, prefix: string): Promise<BridgePod> {
  const netns = await createNetns(scope, prefix);
  const containerId = netns.name;
  const ifname = 'eth0';
  const opts = { bridge: network.bridge, ip: network.net.v4Cidr(host), gw: network.net.v4(1), name: network.name };
  const t0 = Date.now();
  const prevResult = await addBridgePod(scope, { ...opts, netns: netns.path, containerId, ifname });
  const addMs = Date.now() - t0;
  const link = await linkShow(ifname, netns.name);
  if (!link) throw new Error(`pod ${netns.name}: ${ifname} missing after the bridge plugin's ADD`);
  const bridgeConf = bridgeConfig(opts);
  return {
    bridge: network.bridge,
    netns,
    containerId,
    ifname,
    ip: network.net.v4(host),
    mac: link.mac,
    addMs,
    bridgeConf,
    prevResult,
    chained: (pluginConf) => chainConfig(bridgeConf, pluginConf, prevResult),
  };
}

/** One pod (.5) on a fresh PodNetwork: bridge and netns named `<prefix><random>`. */
export async function createBridgePod(scope: Scope, prefix: string): Promise<BridgePod> {
  return attachPod(scope, await createPodNetwork(scope, prefix), 5, prefix);
}
