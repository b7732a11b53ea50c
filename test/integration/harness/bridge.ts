// Host-side L2 for tests: a Linux bridge in the host netns, and stand-in pods
// (a netns whose veth pair stays wholly inside it: this kernel has no dummy
// driver).
import { podPrevResult } from './cni';
import { runOk } from './exec';
import { deleteLink, linkShow } from './links';
import { createNetns, type Netns } from './netns';
import { randomMac, uniqueName, type Subnet } from './names';
import type { Scope } from './scope';
import { setSysctl } from './sysctl';

/** How createBridge sets up the bridge. */
export interface BridgeOptions {
  /** The node's address on the bridge, e.g. 10.88.0.1/24. */
  v4Cidr: string;
  /** An IPv6 address for the bridge (added with nodad); without it, IPv6 is disabled on the bridge. */
  v6Cidr?: string;
  /** Name prefix (≤ 9 chars). Default `hbr`. */
  prefix?: string;
  /** The bridge MAC. Default: a random locally administered one. */
  mac?: string;
}

/**
 * Creates an up bridge (STP off) in the host netns with its addresses; deleted at
 * scope close. Its MAC is set explicitly: a bridge with an automatic MAC takes
 * its lowest port's MAC, and that change (NETDEV_CHANGEADDR) flushes every
 * neighbour entry on it, which would erase a planted stale entry.
 */
export async function createBridge(scope: Scope, opts: BridgeOptions): Promise<string> {
  const name = uniqueName(opts.prefix ?? 'hbr');
  await runOk('ip', ['link', 'add', name, 'type', 'bridge', 'stp_state', '0']);
  scope.defer(() => deleteLink(name), `bridge ${name}`);
  await runOk('ip', ['link', 'set', name, 'address', opts.mac ?? randomMac()]);
  if (opts.v6Cidr === undefined) await setSysctl(`net.ipv6.conf.${name}.disable_ipv6`, 1);
  await runOk('ip', ['addr', 'add', opts.v4Cidr, 'dev', name]);
  if (opts.v6Cidr !== undefined) await runOk('ip', ['-6', 'addr', 'add', opts.v6Cidr, 'dev', name, 'nodad']);
  await runOk('ip', ['link', 'set', name, 'up']);
  return name;
}

/** A pod interface of a stand-in pod: a veth pair whose both ends live in the pod's netns. */
export interface StandInInterfaceOptions {
  /** The pod interface. */
  ifname: string;
  /** The veth peer that stays in the pod netns. */
  peer: string;
  /** MAC for the pod interface. Default: the kernel's random one. */
  mac?: string;
  /** IPv4 addresses (CIDR) for the pod interface. */
  v4?: string[];
  /** IPv6 addresses (CIDR) for the pod interface, added with nodad unless `dad`. */
  v6?: string[];
  /** Run DAD for the IPv6 addresses (they start TENTATIVE). Default false. */
  dad?: boolean;
  /** Bring the pod interface up. Default true. The peer is always up. */
  up?: boolean;
  /** Sysctls set in the pod netns before the interface goes up, e.g. `net.ipv4.conf.eth0.arp_notify`. */
  sysctls?: Record<string, string | number>;
}

/** How createStandInPod builds its pod: its netns and its first interface. */
export interface StandInPodOptions extends Partial<StandInInterfaceOptions> {
  /** Netns name prefix (≤ 9 chars). Default `hpod`. */
  prefix?: string;
}

/** A stand-in pod: its netns, its interface and the peer end next to it. */
export interface StandInPod {
  netns: Netns;
  ifname: string;
  peer: string;
  mac: string;
}

/**
 * Adds a pod interface to a stand-in pod's netns: `ifname`, with its veth peer
 * next to it, up with IPv6 disabled so it makes no noise of its own. Goes away
 * with the netns. Resolves with the interface's MAC.
 */
export async function addStandInInterface(pod: { netns: Netns }, opts: StandInInterfaceOptions): Promise<string> {
  const ns = pod.netns.name;
  const { ifname, peer } = opts;
  await runOk('ip', ['-n', ns, 'link', 'add', ifname, 'type', 'veth', 'peer', 'name', peer]);
  await setSysctl(`net.ipv6.conf.${peer}.disable_ipv6`, 1, ns);
  await runOk('ip', ['-n', ns, 'link', 'set', peer, 'up']);
  if (opts.mac !== undefined) await runOk('ip', ['-n', ns, 'link', 'set', ifname, 'address', opts.mac]);
  for (const [key, value] of Object.entries(opts.sysctls ?? {})) await setSysctl(key, value, ns);
  for (const cidr of opts.v4 ?? []) await runOk('ip', ['-n', ns, 'addr', 'add', cidr, 'dev', ifname]);
  for (const cidr of opts.v6 ?? []) {
    await runOk('ip', ['-n', ns, '-6', 'addr', 'add', cidr, 'dev', ifname, ...(opts.dad ? [] : ['nodad'])]);
  }
  if (opts.up ?? true) await runOk('ip', ['-n', ns, 'link', 'set', ifname, 'up']);
  const link = await linkShow(ifname, ns);
  if (!link) throw new Error(`stand-in pod ${ns}: ${ifname} vanished`);
  return link.mac;
}

/** Creates a stand-in pod: a netns with one pod interface (addStandInInterface, `eth0` and `peer0` by default). */
export async function createStandInPod(scope: Scope, opts: StandInPodOptions = {}): Promise<StandInPod> {
  const netns = await createNetns(scope, opts.prefix ?? 'hpod');
  const ifname = opts.ifname ?? 'eth0';
  const peer = opts.peer ?? 'peer0';
  return { netns, ifname, peer, mac: await addStandInInterface({ netns }, { ...opts, ifname, peer }) };
}

/** How quietStandIn builds its pod: at .host of net (default 5), dual-stack with `v6`, eth0 down with `up: false`. */
export interface QuietStandInOptions {
  prefix: string;
  net: Subnet;
  host?: number;
  v6?: boolean;
  up?: boolean;
}

/** A quiet stand-in pod, its eth0's IPv4 address and CIDRs, and the prevResult naming them (cniVersion 1.0.0). */
export interface QuietStandIn extends StandInPod {
  ip: string;
  cidrs: string[];
  result: Record<string, unknown>;
}

/**
 * A stand-in pod that makes no noise of its own (no arp_notify; IPv6 off, or with `v6` an address without
 * ndisc_notify), so that every frame from its MAC in a capture is the announcer's.
 */
export async function quietStandIn(scope: Scope, opts: QuietStandInOptions): Promise<QuietStandIn> {
  const { net, v6 = false } = opts;
  const host = opts.host ?? 5;
  const cidrs = [net.v4Cidr(host), ...(v6 ? [net.v6Cidr(host)] : [])];
  const pod = await createStandInPod(scope, {
    prefix: opts.prefix,
    v4: [net.v4Cidr(host)],
    ...(v6 ? { v6: [net.v6Cidr(host)] } : {}),
    up: opts.up ?? true,
    sysctls: {
      'net.ipv4.conf.eth0.arp_notify': 0,
      ...(v6 ? { 'net.ipv6.conf.eth0.ndisc_notify': 0 } : { 'net.ipv6.conf.eth0.disable_ipv6': 1 }),
    },
  });
  const result = podPrevResult(pod.netns.path, [{ name: pod.ifname, mac: pod.mac, addresses: cidrs }]);
  return { ...pod, ip: net.v4(host), cidrs, result };
}

/** A veth pair in the host netns (e.g. a stand-in macvlan parent). */
export interface HostVeth {
  name: string;
  peer: string;
}

/**
 * Creates an up veth pair in the host netns, both ends named `<prefix><random>`
 * and with IPv6 disabled (no noise); deleted at scope close.
 */
export async function createHostVeth(scope: Scope, prefix = 'hve'): Promise<HostVeth> {
  const name = uniqueName(prefix);
  const peer = uniqueName(prefix);
  await runOk('ip', ['link', 'add', name, 'type', 'veth', 'peer', 'name', peer]);
  scope.defer(() => deleteLink(name), `veth ${name}`);
  for (const end of [name, peer]) {
    await setSysctl(`net.ipv6.conf.${end}.disable_ipv6`, 1);
    await runOk('ip', ['link', 'set', end, 'up']);
  }
  return { name, peer };
}
