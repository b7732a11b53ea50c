// A throwaway bridge pod built with the real bridge plugin (static IPAM) on the
// integration harness, for `make bench` and other scripts that want one pod on
// one bridge. Everything it creates is undone when the caller's Scope closes.
import { addBridgePod, bridgeConfig, chainConfig } from '../../test/integration/harness/cni';
import { createBridge } from '../../test/integration/harness/bridge';
import { createNetns, type Netns } from '../../test/integration/harness/netns';
import { allocSubnet, uniqueName } from '../../test/integration/harness/names';
import type { Scope } from '../../test/integration/harness/scope';

/** A pod attached to a fresh bridge by the real bridge plugin. */
export interface BridgePod {
  /** The host bridge. */
  bridge: string;
  /** The pod's netns (name for `ip netns exec`, path for CNI_NETNS). */
  netns: Netns;
  /** CNI_CONTAINERID used for the attachment; unique per call. */
  containerId: string;
  /** CNI_IFNAME inside the pod. */
  ifname: string;
  /** The bridge plugin's config (network `name`, `cniVersion`). */
  bridgeConf: { name: string; cniVersion: string; [key: string]: unknown };
  /** The bridge plugin's ADD result, the prevResult of a chained plugin. */
  prevResult: unknown;
  /** The stdin a runtime gives a chained plugin with `pluginConf` after the bridge. */
  chained(pluginConf: object): Record<string, unknown>;
}

/**
 * Creates a bridge (STP off, explicit MAC, IPv4 only) and a netns, and ADDs
 * the pod through /usr/lib/cni/bridge with a static address; the bridge DEL,
 * the netns and the bridge are undone at scope close, newest first.
 */
export async function createBridgePod(scope: Scope, prefix = 'bnch'): Promise<BridgePod> {
  const net = allocSubnet();
  const bridge = await createBridge(scope, { v4Cidr: net.v4Cidr(1), prefix });
  const netns = await createNetns(scope, prefix);
  const containerId = uniqueName(`${prefix}-`);
  const ifname = 'eth0';
  const opts = { bridge, ip: net.v4Cidr(5), gw: net.v4(1), name: `${prefix}-net` };
  const prevResult = await addBridgePod(scope, { ...opts, netns: netns.path, containerId, ifname });
  const bridgeConf = bridgeConfig(opts);
  return {
    bridge,
    netns,
    containerId,
    ifname,
    bridgeConf,
    prevResult,
    chained: (pluginConf) => chainConfig(bridgeConf, pluginConf, prevResult),
  };
}
