// Many stand-in pods on one bridge at once, built and removed with `ip -batch`:
// one ip process for the host side of every pod and one per pod inside its
// netns, where the bridge plugin would take one run per pod (hundreds of pods
// in seconds, not minutes, on this machine). Each pod is a netns whose eth0 is
// a veth whose host end is a port of the bridge, as the bridge plugin makes it.
import { podPrevResult } from './cni';
import { run, runOk } from './exec';
import { randomMac, uniqueName, type Subnet } from './names';
import { netnsPath, type Netns } from './netns';
import type { Scope } from './scope';

/** One pod of a fleet. */
export interface FleetPod {
  netns: Netns;
  /** The host end of its veth: a port of the fleet's bridge. */
  hostVeth: string;
  /** eth0's MAC. */
  mac: string;
  /** eth0's IPv4 address, without the prefix length. */
  ip: string;
  /** A prevResult (1.0.0) naming eth0 in the pod with its address. */
  result: Record<string, unknown>;
}

/** What createStandInFleet builds. */
export interface FleetOptions {
  /** Name prefix of the netns and host veths (≤ 9 chars). */
  prefix: string;
  net: Subnet;
  /** The bridge the pods' host ends join (createBridge). */
  bridge: string;
  /** One pod per host number of `net`. */
  hosts: readonly number[];
}

/**
 * `n` distinct names of `prefix` (uniqueName): 400 draws of 24 random bits repeat one about once in 200 fleets, and
 * `ip -batch` then fails with "File exists".
 */
function distinctNames(prefix: string, n: number): string[] {
  const names = new Set<string>();
  while (names.size < n) names.add(uniqueName(prefix));
  return [...names];
}

/** Distinct random MACs, one per pod. */
function distinctMacs(n: number): string[] {
  const macs = new Set<string>();
  while (macs.size < n) macs.add(randomMac());
  return [...macs];
}

/**
 * Creates one pod per host of `opts.hosts`: its netns, eth0 (IPv4 only, no
 * IPv6 link-local address, arp_notify as the node's default leaves it) up,
 * and the host end up on the bridge. Undone at scope close: the host ends are
 * deleted (which takes each pod's eth0 along at once), then the netns.
 */
export async function createStandInFleet(scope: Scope, opts: FleetOptions): Promise<FleetPod[]> {
  const macs = distinctMacs(opts.hosts.length);
  const names = distinctNames(opts.prefix, 2 * opts.hosts.length);
  const pods: FleetPod[] = opts.hosts.map((host, i) => {
    const name = names[2 * i]!;
    const netns = { name, path: netnsPath(name) };
    const ip = opts.net.v4(host);
    const result = podPrevResult(netns.path, [{ name: 'eth0', mac: macs[i]!, addresses: [opts.net.v4Cidr(host)] }]);
    return { netns, hostVeth: names[2 * i + 1]!, mac: macs[i]!, ip, result };
  });
  scope.defer(() => removeFleet(pods), `${pods.length} fleet pods on ${opts.bridge}`);
  const host = pods.flatMap((p) => [
    `netns add ${p.netns.name}`,
    `link add ${p.hostVeth} type veth peer name eth0 address ${p.mac} netns ${p.netns.name}`,
    `link set ${p.hostVeth} addrgenmode none`,
    `link set ${p.hostVeth} master ${opts.bridge} up`,
  ]);
  await runOk('ip', ['-batch', '-'], { stdin: `${host.join('\n')}\n`, timeoutMs: 120_000 });
  for (const [i, p] of pods.entries()) {
    const inside = [
      `addr add ${opts.net.v4Cidr(opts.hosts[i]!)} dev eth0`,
      'link set eth0 addrgenmode none',
      'link set eth0 up',
    ];
    await runOk('ip', ['-n', p.netns.name, '-batch', '-'], { stdin: `${inside.join('\n')}\n` });
  }
  return pods;
}

/**
 * Deletes the pods' host veths, then their netns; what is already gone is fine (`ip -force` goes on after a failed
 * line).
 */
async function removeFleet(pods: readonly FleetPod[]): Promise<void> {
  const lines = [...pods.map((p) => `link del ${p.hostVeth}`), ...pods.map((p) => `netns del ${p.netns.name}`)];
  const res = await run('ip', ['-force', '-batch', '-'], { stdin: `${lines.join('\n')}\n`, timeoutMs: 120_000 });
  const real = res.stderr
    .split('\n')
    .filter((l) => l.trim() !== '' && !/Cannot find device|No such file or directory|Command failed/.test(l));
  if (real.length > 0) throw new Error(`removing ${pods.length} fleet pods: ${real.slice(0, 5).join('; ')}`);
}
