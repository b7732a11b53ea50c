// Neighbour (ARP/NDP) entries, read with `ip -j neigh`: on the node (host netns)
// or, given a netns name, inside a pod.
import { isIPv6 } from 'node:net';
import { runOk } from './exec';

/** One neighbour entry: its first NUD state (STALE, REACHABLE, FAILED…), all states, and MAC. */
export interface NeighEntry {
  state: string;
  states: string[];
  /** Absent for entries without a link-layer address (INCOMPLETE, FAILED). */
  mac?: string;
}

interface IpNeigh {
  dst: string;
  dev?: string;
  lladdr?: string;
  state?: string[];
}

/** The canonical text of an IP address, so `fd00:88::0005` matches `fd00:88::5`. */
export function canonicalIp(ip: string): string {
  return isIPv6(ip) ? new URL(`http://[${ip}]/`).hostname.slice(1, -1) : ip;
}

function nsArgs(netns: string | undefined): string[] {
  return netns === undefined ? [] : ['-n', netns];
}

/** The MAC of the pod that left: the stale entries tests plant point at it. */
export const OLD_MAC = '86:03:17:7a:eb:6e';

/** Sets (replaces) the entry for ip on dev to mac in state STALE, as a departed pod would leave it. */
export async function plantStale(dev: string, ip: string, mac: string, netns?: string): Promise<void> {
  await runOk('ip', [...nsArgs(netns), 'neigh', 'replace', ip, 'dev', dev, 'lladdr', mac, 'nud', 'stale']);
}

/** The entry for ip on dev (in the host, or inside netns), or undefined when there is none. */
export async function neighEntry(dev: string, ip: string, netns?: string): Promise<NeighEntry | undefined> {
  const { stdout } = await runOk('ip', [...nsArgs(netns), '-j', 'neigh', 'show', 'dev', dev]);
  const want = canonicalIp(ip);
  const found = (stdout.trim() === '' ? [] : (JSON.parse(stdout) as IpNeigh[])).find(
    (n) => canonicalIp(n.dst) === want,
  );
  if (!found) return undefined;
  const states = found.state ?? [];
  const entry: NeighEntry = { state: states[0] ?? 'NONE', states };
  if (found.lladdr !== undefined) entry.mac = found.lladdr.toLowerCase();
  return entry;
}
