// The soak's network and its pods: one bridge (the node at .1, a keeper pod at .9 that keeps its carrier), a real
// Linux gateway at .254 that the routed pods route through, one capture on the bridge for the whole run, and each
// cycle's pod of the real bridge plugin. Each pod's netns gets a marker: a veth whose host end is named with the run's
// prefix and whose other end lives in the pod's netns. The kernel removes both ends only once the netns is freed, so a
// marker still there after `ip netns del` means something keeps the pod's netns alive.
import { attachBridgePod, bridgeWithKeeper, type BridgePod } from '../../test/integration/harness/bridge-pods';
import { startCapture, type Capture } from '../../test/integration/harness/capture';
import { run, runOk } from '../../test/integration/harness/exec';
import { createGateway, type Gateway } from '../../test/integration/harness/gateway';
import { deleteLink, linkShow, listLinks } from '../../test/integration/harness/links';
import { allocSubnet, uniqueName, type Subnet } from '../../test/integration/harness/names';
import { setPortState } from '../../test/integration/harness/port-hold';
import { ownAnnouncerProcessesNow } from '../../test/integration/harness/processes';
import { routesOverlapping } from '../../test/integration/harness/routes';
import type { Scope } from '../../test/integration/harness/scope';
import { statSync } from 'node:fs';
import { readdir, readFile, readlink } from 'node:fs/promises';
import type { Cycle } from './model';
import { pollUntil } from './time';

/**
 * What the capture keeps: ARP, and Neighbor Solicitations and Advertisements (ICMPv6 right after the fixed header,
 * as NDP always is). MLD reports (behind a hop-by-hop header) and router solicitations are the pods' kernels' own.
 */
export const CAPTURE_FILTER = 'arp or (icmp6 and (ip6[40] == 135 or ip6[40] == 136))';
/** The network's name in every conflist of the run. */
const NETWORK = 'soaknet';
/** How long after `ip netns del` a pod's netns may take to be freed. */
export const NETNS_FREED_WITHIN_MS = 5000;

/** The bridge, its subnet, the gateway and the capture. */
export interface SoakNetwork {
  net: Subnet;
  bridge: string;
  gw: Gateway;
  capture: Capture;
  prefix: string;
}

/** A subnet no route of the node covers or lies in (as createPodNetwork picks one). */
async function freeSubnet(): Promise<Subnet> {
  for (let i = 0; i < 10; i++) {
    const net = allocSubnet();
    if ((await routesOverlapping(`${net.v4(0)}/24`)).length === 0) return net;
  }
  throw new Error('no free 10.88.N.0/24: the node routes each one tried');
}

/** Creates the run's bridge (IPv4 and IPv6), keeper, gateway and capture; all go at scope close. */
export async function createSoakNetwork(scope: Scope, prefix: string): Promise<SoakNetwork> {
  const net = await freeSubnet();
  const bridge = await bridgeWithKeeper(scope, net, { prefix, ip6: true });
  const gw = await createGateway(scope, { prefix, bridge, net, ip6: true });
  // Markers left by a netns that was never freed are removed at the end (the check has read them by then).
  scope.defer(() => removeMarkers(prefix), 'netns markers');
  const capture = await startCapture(scope, { iface: bridge, filter: CAPTURE_FILTER });
  return { net, bridge, gw, capture, prefix };
}

/** A worker's pod host number: .10 upwards. */
export function hostOf(worker: number): number {
  return 10 + worker;
}

/** OpenShift's and ovn-kubernetes's MAC for an IPv4 address: 0a:58 and its four bytes. */
export function ipDerivedMac(ip: string): string {
  return ['0a', '58', ...ip.split('.').map((b) => Number(b).toString(16).padStart(2, '0'))].join(':');
}

/** The static IPAM of a cycle's pod: its addresses, and default routes through the gateway when routed. */
function ipamOf(sn: SoakNetwork, cycle: Cycle): Record<string, unknown> {
  const { net, gw } = sn;
  const host = hostOf(cycle.worker);
  const routed = cycle.profile.routed;
  const addresses: { address: string; gateway?: string }[] = [
    routed ? { address: net.v4Cidr(host), gateway: gw.v4 } : { address: net.v4Cidr(host) },
  ];
  const routes: { dst: string; gw: string }[] = [{ dst: '0.0.0.0/0', gw: gw.v4 }];
  if (cycle.profile.ipv6) {
    addresses.push(routed ? { address: net.v6Cidr(host), gateway: gw.v6! } : { address: net.v6Cidr(host) });
    routes.push({ dst: '::/0', gw: gw.v6! });
  }
  return { type: 'static', addresses, ...(routed ? { routes } : {}) };
}

/** A cycle's pod, ready (eth0 up, its port forwarding), with its marker; a deferred one's port held in listening. */
export async function preparePod(cs: Scope, sn: SoakNetwork, cycle: Cycle): Promise<BridgePod & { marker: string }> {
  const pod = await attachBridgePod(cs, {
    prefix: sn.prefix,
    net: sn.net,
    bridge: sn.bridge,
    host: hostOf(cycle.worker),
    containerId: cycle.containerId,
    name: NETWORK,
    extra: { ipam: ipamOf(sn, cycle) },
    settle: true,
  });
  cycle.originalMac = pod.mac;
  cycle.netnsIno = statSync(pod.netns.path).ino;
  const marker = uniqueName(`${sn.prefix}m`);
  await runOk('ip', ['link', 'add', marker, 'type', 'veth', 'peer', 'name', 'mk0', 'netns', pod.netns.name]);
  if (cycle.profile.deferred) await setPortState(pod.hostVeth, 'listening');
  return { ...pod, marker };
}

/** eth0's MAC in the pod's netns now; undefined when it cannot be read. */
export async function podMac(netns: string): Promise<string | undefined> {
  return (await linkShow('eth0', netns).catch(() => undefined))?.mac;
}

/** Whether a link of the host is there now (a link that vanishes while it is read is not). */
async function linkThere(name: string): Promise<boolean> {
  const res = await run('ip', ['link', 'show', 'dev', name]);
  if (res.code === 0) return true;
  if (/does not exist|Cannot find device|No such device/.test(res.stderr)) return false;
  throw new Error(`ip link show ${name}: ${res.stderr.trim()}`);
}

/** Waits (bounded) for the marker to go with the pod's netns: ms it took, or `kept`. */
export async function netnsFreed(marker: string, deletedAt: number): Promise<number | 'kept'> {
  const gone = await pollUntil(async () => !(await linkThere(marker)), NETNS_FREED_WITHIN_MS, 100);
  return gone ? Date.now() - deletedAt : 'kept';
}

/**
 * Goes on watching a marker (a netns kept alive) until it goes or `signal` aborts: when it went, for the evidence of
 * who held the netns (an announcer stop right before).
 */
export async function watchFreed(marker: string, signal: AbortSignal): Promise<number | undefined> {
  const gone = await pollUntil(async () => !(await linkThere(marker).catch(() => true)), 600_000, 200, signal);
  return gone ? Date.now() : undefined;
}

/**
 * The threads of this run's announcers that are in the netns `ino`: a thread the runtime created while the announcer
 * was inside a pod's netns (setns moves only the calling thread; a new thread is born in its creator's netns) stays
 * there, and keeps that netns alive. Each as `pid P thread T (comm)`.
 */
export async function announcerThreadsIn(ino: number): Promise<string[]> {
  const found: string[] = [];
  for (const p of await ownAnnouncerProcessesNow()) {
    for (const tid of await readdir(`/proc/${p.pid}/task`).catch(() => [])) {
      const ns = await readlink(`/proc/${p.pid}/task/${tid}/ns/net`).catch(() => '');
      if (ns !== `net:[${ino}]`) continue;
      const comm = (await readFile(`/proc/${p.pid}/task/${tid}/comm`, 'utf8').catch(() => '?')).trim();
      found.push(`pid ${p.pid} thread ${tid} (${comm})`);
    }
  }
  return found;
}

/** The markers still there: pods' netns not freed. */
export async function markersLeft(prefix: string): Promise<string[]> {
  const marker = new RegExp(`^${prefix}m[0-9a-f]{6}$`);
  return (await listLinks()).map((l) => l.ifname).filter((n) => marker.test(n));
}

async function removeMarkers(prefix: string): Promise<void> {
  for (const name of await markersLeft(prefix)) await deleteLink(name);
}
