// Finding a pod interface and, for a veth, its host-side peer and bridge port.
import type { Rtnl } from '../sys/rtnl';
import type { LinkInfo } from '../wire/rtnetlink';

/** A pod interface as found in the pod netns, with its host-side bridge port if it has one. */
export interface ResolvedInterface {
  name: string;
  index: number;
  kind: string | undefined;
  /** Set when the pod link is an ipvlan: l3/l3s modes have no L2 neighbours to fix. */
  ipvlanMode: 'l2' | 'l3' | 'l3s' | undefined;
  /** The veth peer in the host netns, when there is one. */
  hostPeer: { index: number; name: string } | undefined;
}

/**
 * Looks up `name` in the pod netns and its veth peer in the host netns.
 * IFLA_LINK names the peer's ifindex in the netns of IFLA_LINK_NETNSID, so a
 * host link with that index counts only if it is a veth whose own IFLA_LINK
 * points back at the pod link; `hostNameHints` (prevResult's host-side
 * interfaces) are tried when it does not.
 */
export function resolveInterface(
  pod: Rtnl,
  host: Rtnl,
  name: string,
  hostNameHints: readonly string[],
): ResolvedInterface | undefined {
  const link = pod.linkByName(name);
  if (!link) return undefined;
  return {
    name,
    index: link.index,
    kind: link.kind,
    ipvlanMode: link.ipvlanMode,
    hostPeer: findHostPeer(link, host, hostNameHints),
  };
}

function findHostPeer(
  link: LinkInfo,
  host: Rtnl,
  hostNameHints: readonly string[],
): { index: number; name: string } | undefined {
  if (link.kind !== 'veth' || link.linkIndex === undefined || link.linkNetnsid === undefined) return undefined;
  const isPeer = (h: LinkInfo | undefined): h is LinkInfo =>
    h !== undefined && h.kind === 'veth' && h.linkIndex === link.index && h.linkNetnsid !== undefined;
  let peer: LinkInfo | undefined = host.linkByIndex(link.linkIndex);
  for (const hint of hostNameHints) {
    if (isPeer(peer)) break;
    peer = host.linkByName(hint);
  }
  return isPeer(peer) ? { index: peer.index, name: peer.name } : undefined;
}
