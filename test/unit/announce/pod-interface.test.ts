// Finding a pod interface's host-side veth peer: IFLA_LINK names the peer's
// ifindex in the netns of IFLA_LINK_NETNSID, and the peer must point back.
import { describe, expect, it } from 'vitest';
import { resolveInterface } from '../../../src/announce/pod-interface';
import type { Rtnl } from '../../../src/sys/rtnl';
import type { LinkInfo } from '../../../src/wire/rtnetlink';

function link(fields: Partial<LinkInfo> & { index: number; name: string }): LinkInfo {
  return { mac: undefined, up: true, running: true, noarp: false, linkIndex: undefined, linkNetnsid: undefined, kind: 'veth', ipvlanMode: undefined, portState: undefined, ...fields };
}

/** A netns's view holding `links`, and the names and indexes it was asked for. */
function netns(links: LinkInfo[]) {
  const asked: (string | number)[] = [];
  const rtnl = {
    linkByName: (name: string) => (asked.push(name), links.find((l) => l.name === name)),
    linkByIndex: (index: number) => (asked.push(index), links.find((l) => l.index === index)),
  } as unknown as Rtnl;
  return { rtnl, asked };
}

/** The pod's eth0 (ifindex 2), a veth whose peer is ifindex 14 of netnsid 0. */
const POD_ETH0 = link({ index: 2, name: 'eth0', linkIndex: 14, linkNetnsid: 0 });
/** The host end: ifindex 14, pointing back at ifindex 2 of the pod's netnsid. */
const HOST_PEER = link({ index: 14, name: 'veth1234', linkIndex: 2, linkNetnsid: 3 });

describe('resolveInterface', () => {
  it('finds the host peer through IFLA_LINK and IFLA_LINK_NETNSID', () => {
    const host = netns([link({ index: 9, name: 'veth9', linkIndex: 2, linkNetnsid: 5 }), HOST_PEER]);
    expect(resolveInterface(netns([POD_ETH0]).rtnl, host.rtnl, 'eth0', [])).toEqual({
      name: 'eth0',
      index: 2,
      kind: 'veth',
      ipvlanMode: undefined,
      hostPeer: { index: 14, name: 'veth1234' },
    });
    expect(host.asked).toEqual([14]);
  });

  it("tries prevResult's host interface names when the host link of that index does not point back", () => {
    const stranger = link({ index: 14, name: 'eth1', kind: 'bridge' });
    const moved = { ...HOST_PEER, index: 21, name: 'vethabcd' };
    const host = netns([stranger, link({ index: 30, name: 'vethzzzz', linkIndex: 7, linkNetnsid: 3 }), moved]);
    expect(resolveInterface(netns([POD_ETH0]).rtnl, host.rtnl, 'eth0', ['vethzzzz', 'vethabcd'])?.hostPeer).toEqual({ index: 21, name: 'vethabcd' });
    expect(host.asked).toEqual([14, 'vethzzzz', 'vethabcd']);
  });

  it('finds none for a veth whose peer is in the pod netns (no IFLA_LINK_NETNSID), nor a host link that is no veth peer', () => {
    const host = netns([HOST_PEER]);
    expect(resolveInterface(netns([{ ...POD_ETH0, linkNetnsid: undefined }]).rtnl, host.rtnl, 'eth0', ['veth1234'])?.hostPeer).toBeUndefined();
    expect(host.asked).toEqual([]);
    const notBack = netns([{ ...HOST_PEER, linkIndex: 3 }, { ...HOST_PEER, index: 15, name: 'vethsame', linkNetnsid: undefined }]);
    expect(resolveInterface(netns([POD_ETH0]).rtnl, notBack.rtnl, 'eth0', ['vethsame'])?.hostPeer).toBeUndefined();
  });

  it('finds none for a macvlan, and nothing for a name the pod lacks', () => {
    const macvlan = link({ index: 2, name: 'eth0', kind: 'macvlan', linkIndex: 14, linkNetnsid: 0 });
    expect(resolveInterface(netns([macvlan]).rtnl, netns([HOST_PEER]).rtnl, 'eth0', [])).toMatchObject({ kind: 'macvlan', hostPeer: undefined });
    expect(resolveInterface(netns([POD_ETH0]).rtnl, netns([HOST_PEER]).rtnl, 'net1', [])).toBeUndefined();
  });
});
