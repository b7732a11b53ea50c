// Helpers for the end-to-end repair tests (bridge, dual stack, macvlan,
// stand-in pods): the announcer chained the way a runtime chains it (optionally
// run inside a "node" netns), a second interface for a stand-in pod, and a
// macvlan node: a netns that plays the node, with a veth parent inside it
// (field notes §5b). The per-test announcer state dir and log file live in
// announcer-files.ts, re-exported here.
import { join } from 'node:path';
import type { AnnouncerFiles } from './announcer-files';
import { ANNOUNCER, assertCniOk, cniExec, runCniCommand, SYSTEM_CNI_DIR, type CniCall, type CniOutput } from './cni';
import { runOk } from './exec';
import { linkShow } from './links';
import { createNetns, type Netns } from './netns';
import { uniqueName } from './names';
import { ownAnnouncerProcesses } from './processes';
import type { Scope } from './scope';
import { setSysctl } from './sysctl';
import { waitFor } from './wait';
import type { StandInPod } from './bridge';

export { announcerFiles, type AnnouncerFiles } from './announcer-files';

/** The real macvlan plugin. */
export const MACVLAN_PLUGIN = join(SYSTEM_CNI_DIR, 'macvlan');

/**
 * Runs a plugin like a runtime, from inside the named `node` netns when given
 * (`ip netns exec node plugin`), so that the plugin's "host" is that netns.
 */
export async function pluginExec(plugin: string, call: CniCall, config: object, node?: string): Promise<CniOutput> {
  if (node === undefined) return cniExec(plugin, call, config);
  return runCniCommand('ip', ['netns', 'exec', node, plugin], call, config);
}

/** One chained announcer attachment. */
export interface AnnouncerAttachment {
  /** The main plugin's conf: the network's name and cniVersion come from it. */
  mainConf: { name: string; cniVersion: string };
  prevResult: unknown;
  containerId: string;
  /** CNI_NETNS. */
  netns: string;
  /** CNI_IFNAME. Default eth0. */
  ifname?: string;
  /** Announcer options; `stateDir` and `logFile` come from `files`. */
  options?: Record<string, unknown>;
  files: AnnouncerFiles;
  /** Run the announcer inside this named netns (the node), not the test's own. */
  node?: string;
}

/** The announcer's ADD output, and when (wall clock, ms) its process had exited. */
export interface AnnouncerAddOutput extends CniOutput {
  exitedAt: number;
}

function announcerCall(a: AnnouncerAttachment, command: 'ADD' | 'DEL'): [CniCall, Record<string, unknown>] {
  const conf = { type: 'announcer', ...a.options, stateDir: a.files.stateDir, logFile: a.files.logFile };
  const config = { ...conf, name: a.mainConf.name, cniVersion: a.mainConf.cniVersion, prevResult: a.prevResult };
  return [{ command, containerId: a.containerId, netns: a.netns, ifname: a.ifname ?? 'eth0' }, config];
}

/** DELs the announcer attachment (as a runtime would, with prevResult). */
export async function announcerDel(a: AnnouncerAttachment): Promise<CniOutput> {
  const [call, config] = announcerCall(a, 'DEL');
  return pluginExec(ANNOUNCER, call, config, a.node);
}

/**
 * ADDs the announcer chained after a main plugin; its DEL is registered at
 * scope close first (a failed or half-done ADD is undone too). Never throws on
 * a plugin error: the test judges the output.
 */
export async function announcerAdd(scope: Scope, a: AnnouncerAttachment): Promise<AnnouncerAddOutput> {
  scope.defer(async () => {
    assertCniOk(`announcer DEL ${a.containerId}`, await announcerDel(a));
  }, `announcer DEL ${a.containerId}`);
  const [call, config] = announcerCall(a, 'ADD');
  const out = await pluginExec(ANNOUNCER, call, config, a.node);
  return { ...out, exitedAt: Date.now() };
}

/**
 * What the announcer left behind: its live processes started by this test
 * process, and the files in stateDir. Waits (bounded) for both to be empty,
 * since a tail killed by DEL may take a moment to vanish; resolves with what
 * is still there.
 */
export async function announcerLeftovers(files: AnnouncerFiles): Promise<string[]> {
  const now = async (): Promise<string[]> => [
    ...(await ownAnnouncerProcesses()).map((p) => `process ${p.pid}: ${p.argv.join(' ')}`),
    ...(await files.stateFiles()).map((f) => `state file ${f}`),
  ];
  return waitFor(async () => ((await now()).length === 0 ? [] : false), { timeoutMs: 3000, what: 'no announcer leftovers' }).catch(now);
}

/** One more pod interface of a stand-in pod. */
export interface ExtraInterfaceOptions {
  ifname: string;
  peer: string;
  v4?: string[];
  /** Added with nodad. */
  v6?: string[];
  /** Sysctls set before the interface goes up. */
  sysctls?: Record<string, string | number>;
}

/**
 * Adds another veth pair inside a stand-in pod's netns (both ends stay there,
 * as createStandInPod does): `ifname` is a pod interface, the peer is up with
 * IPv6 disabled. Goes away with the netns. Resolves with the interface's MAC.
 */
export async function addStandInInterface(pod: StandInPod, opts: ExtraInterfaceOptions): Promise<string> {
  const ns = pod.netns.name;
  await runOk('ip', ['-n', ns, 'link', 'add', opts.ifname, 'type', 'veth', 'peer', 'name', opts.peer]);
  await setSysctl(`net.ipv6.conf.${opts.peer}.disable_ipv6`, 1, ns);
  await runOk('ip', ['-n', ns, 'link', 'set', opts.peer, 'up']);
  for (const [key, value] of Object.entries(opts.sysctls ?? {})) await setSysctl(key, value, ns);
  for (const cidr of opts.v4 ?? []) await runOk('ip', ['-n', ns, 'addr', 'add', cidr, 'dev', opts.ifname]);
  for (const cidr of opts.v6 ?? []) await runOk('ip', ['-n', ns, '-6', 'addr', 'add', cidr, 'dev', opts.ifname, 'nodad']);
  await runOk('ip', ['-n', ns, 'link', 'set', opts.ifname, 'up']);
  const link = await linkShow(opts.ifname, ns);
  if (!link) throw new Error(`stand-in pod ${ns}: ${opts.ifname} vanished`);
  return link.mac;
}

/** A prevResult (1.0.0) for pod interfaces inside `sandbox`, each with its addresses (CIDR). */
export function podPrevResult(sandbox: string, interfaces: { name: string; mac: string; addresses: string[] }[]): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    interfaces: interfaces.map((i) => ({ name: i.name, mac: i.mac, sandbox })),
    ips: interfaces.flatMap((i, index) => i.addresses.map((address) => ({ address, interface: index }))),
  };
}

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
  await runOk('ip', ['-n', node.netns.name, 'link', 'add', tmp, 'link', node.parent, 'type', ...(opts.type ?? ['macvlan', 'mode', 'bridge'])]);
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
export function macvlanConfig(opts: Pick<MacvlanPodOptions, 'node' | 'addresses' | 'name'>): { cniVersion: string; name: string; [k: string]: unknown } {
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
    assertCniOk(`macvlan DEL ${opts.containerId}`, await pluginExec(MACVLAN_PLUGIN, { ...call, command: 'DEL' }, config, node));
  }, `macvlan DEL ${opts.containerId}`);
  const out = assertCniOk(`macvlan ADD ${opts.containerId}`, await pluginExec(MACVLAN_PLUGIN, { ...call, command: 'ADD' }, config, node));
  return { result: out.json, exitedAt: Date.now() };
}
