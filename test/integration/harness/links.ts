// Reading links with `ip -j link`, in the host or in a netns.
import { run, runOk } from './exec';

/** The parts of `ip -j -d link show` the tests look at. */
export interface Link {
  ifindex: number;
  ifname: string;
  mac: string;
  flags: string[];
  /** Administratively up (IFF_UP). */
  up: boolean;
  operstate: string;
  /** The bridge (or other master) this link is a port of. */
  master?: string;
  /** The peer's ifindex (veth), in the netns `linkNetnsId` names when present. */
  link?: number;
  linkNetnsId?: number;
  /** The link kind (veth, bridge, macvlan…), when it has one. */
  kind?: string;
}

interface IpLink {
  ifindex: number;
  ifname: string;
  address?: string;
  flags?: string[];
  operstate?: string;
  master?: string;
  link_index?: number;
  link_netnsid?: number;
  linkinfo?: { info_kind?: string };
}

function toLink(l: IpLink): Link {
  const flags = l.flags ?? [];
  const link: Link = {
    ifindex: l.ifindex,
    ifname: l.ifname,
    mac: l.address ?? '',
    flags,
    up: flags.includes('UP'),
    operstate: l.operstate ?? 'UNKNOWN',
  };
  if (l.master !== undefined) link.master = l.master;
  if (l.link_index !== undefined) link.link = l.link_index;
  if (l.link_netnsid !== undefined) link.linkNetnsId = l.link_netnsid;
  if (l.linkinfo?.info_kind !== undefined) link.kind = l.linkinfo.info_kind;
  return link;
}

function ipArgs(netns: string | undefined, rest: string[]): string[] {
  return netns === undefined ? ['-j', '-d', ...rest] : ['-n', netns, '-j', '-d', ...rest];
}

/** All links of the host (or of netns, by name). */
export async function listLinks(netns?: string): Promise<Link[]> {
  const { stdout } = await runOk('ip', ipArgs(netns, ['link', 'show']));
  return (JSON.parse(stdout) as IpLink[]).map(toLink);
}

/** One link by name, or undefined when it does not exist. */
export async function linkShow(name: string, netns?: string): Promise<Link | undefined> {
  const res = await run('ip', ipArgs(netns, ['link', 'show', 'dev', name]));
  if (res.code !== 0) {
    if (/does not exist|Cannot find device/.test(res.stderr)) return undefined;
    throw new Error(`ip link show ${name}: ${res.stderr.trim()}`);
  }
  const [link] = JSON.parse(res.stdout) as IpLink[];
  return link && toLink(link);
}

/** Deletes a link; one already gone is fine. */
export async function deleteLink(name: string, netns?: string): Promise<void> {
  const args = netns === undefined ? ['link', 'del', name] : ['-n', netns, 'link', 'del', name];
  const res = await run('ip', args);
  if (res.code !== 0 && !/does not exist|Cannot find device/.test(res.stderr)) {
    throw new Error(`ip link del ${name}: ${res.stderr.trim()}`);
  }
}
