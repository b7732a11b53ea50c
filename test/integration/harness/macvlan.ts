// Pods off the bridge path: a macvlan node (a netns that plays the node, with a
// veth parent inside it: this kernel has no dummy driver) with pods on macvlan
// or ipvlan children of that parent, by hand or through the real macvlan plugin.
import { join } from 'node:path';
import { assertCniOk, pluginExec, SYSTEM_CNI_DIR } from './cni';
import { runOk } from './exec';
import { linkShow } from './links';
import { uniqueName } from './names';
import { createNetns, type Netns } from './netns';
import type { Scope } from './scope';
import { setSysctl } from './sysctl';

/** The real macvlan plugin. */
export const MACVLAN_PLUGIN = join(SYSTEM_CNI_DIR, 'macvlan');

/** A netns playing the node, with a veth pair inside it whose `parent` end serves as macvlan/ipvlan master. */
export interface L2Node {
  netns: Netns;
  /** The master for macvlan/ipvlan children. */
  parent: string;
  /** The parent's veth peer (up, so the parent has carrier). */
  peer: string;
}

/** Creates a node netns holding an up veth pair (IPv6 disabled on both ends, so they make no noise). */
export async function createL2Node(scope: Scope, prefix: string): Promise<L2Node> {
  const netns = await createNetns(scope, prefix);
  const ns = netns.name;
  const parent = 'parent0';
  const peer = 'wire0';
  await runOk('ip', ['-n', ns, 'link', 'add', parent, 'type', 'veth', 'peer', 'name', peer]);
  for (const end of [parent, peer]) {
    await setSysctl(`net.ipv6.conf.${end}.disable_ipv6`, 1, ns);
    await runOk('ip', ['-n', ns, 'link', 'set', end, 'up']);
  }
  return { netns, parent, peer };
}

/** A pod built by hand on a macvlan/ipvlan child of the node's parent. */
export interface ChildPod {
  netns: Netns;
  ifname: string;
  mac: string;
}

/**
 * Creates a pod netns with `eth0`, a child of the node's parent (`type` macvlan
 * mode bridge by default), with addresses (IPv6 with nodad), up. Goes away with
 * its netns at scope close.
 */
export async function createChildPod(
  scope: Scope,
  node: L2Node,
  opts: { prefix: string; v4?: string[]; v6?: string[]; type?: string[] },
): Promise<ChildPod> {
  const netns = await createNetns(scope, opts.prefix);
  const tmp = uniqueName('hch');
  await runOk('ip', [
    '-n',
    node.netns.name,
    'link',
    'add',
    tmp,
    'link',
    node.parent,
    'type',
    ...(opts.type ?? ['macvlan', 'mode', 'bridge']),
  ]);
  await runOk('ip', ['-n', node.netns.name, 'link', 'set', tmp, 'netns', netns.name]);
  const ns = netns.name;
  await runOk('ip', ['-n', ns, 'link', 'set', tmp, 'name', 'eth0']);
  for (const cidr of opts.v4 ?? []) await runOk('ip', ['-n', ns, 'addr', 'add', cidr, 'dev', 'eth0']);
  for (const cidr of opts.v6 ?? []) await runOk('ip', ['-n', ns, '-6', 'addr', 'add', cidr, 'dev', 'eth0', 'nodad']);
  await runOk('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
  const link = await linkShow('eth0', ns);
  if (!link) throw new Error(`child pod ${ns}: eth0 vanished`);
  return { netns, ifname: 'eth0', mac: link.mac };
}

/** How addMacvlanPod attaches a pod through the real macvlan plugin. */
export interface MacvlanPodOptions {
  node: L2Node;
  /** CNI_NETNS. */
  netns: string;
  containerId: string;
  /** Addresses (CIDR), static IPAM. */
  addresses: string[];
  /** Default eth0. */
  ifname?: string;
  /** Default `harness`. */
  name?: string;
}

/** The macvlan plugin's config: mode bridge on the node's parent, static IPAM. */
export function macvlanConfig(opts: Pick<MacvlanPodOptions, 'node' | 'addresses' | 'name'>): {
  cniVersion: string;
  name: string;
  [k: string]: unknown;
} {
  return {
    cniVersion: '1.0.0',
    name: opts.name ?? 'harness',
    type: 'macvlan',
    master: opts.node.parent,
    mode: 'bridge',
    ipam: { type: 'static', addresses: opts.addresses.map((address) => ({ address })) },
  };
}

/**
 * ADDs a pod through the real macvlan plugin, run inside the node netns (so
 * its master is found there), and registers its DEL at scope close. Resolves
 * with the plugin's result and the time its process had exited (wall clock, ms).
 */
export async function addMacvlanPod(scope: Scope, opts: MacvlanPodOptions): Promise<{ result: any; exitedAt: number }> {
  const config = macvlanConfig(opts);
  const call = { containerId: opts.containerId, netns: opts.netns, ifname: opts.ifname ?? 'eth0' };
  const node = opts.node.netns.name;
  scope.defer(async () => {
    assertCniOk(
      `macvlan DEL ${opts.containerId}`,
      await pluginExec(MACVLAN_PLUGIN, { ...call, command: 'DEL' }, config, node),
    );
  }, `macvlan DEL ${opts.containerId}`);
  const out = assertCniOk(
    `macvlan ADD ${opts.containerId}`,
    await pluginExec(MACVLAN_PLUGIN, { ...call, command: 'ADD' }, config, node),
  );
  return { result: out.json, exitedAt: Date.now() };
}
