// Finding a pod interface and its host-side peer (resolveInterface, session.ts).
import { describe, expect, it } from 'vitest';
import { resolveInterface } from '../../../src/announce/session';
import { fakeLink, fakeNetns, fakeRtnl } from '../../support/fake-rtnl';

// The pod's eth0 (ifindex 2) is a veth whose peer is ifindex 7 in the netns of netnsid 0 (the host).
const eth0 = fakeLink({ index: 2, name: 'eth0', linkIndex: 7, linkNetnsid: 0 });
// The host's veth7: its peer is ifindex 2 in the pod (netnsid 3 as the host sees it).
const hostVeth = fakeLink({ index: 7, name: 'veth7', linkIndex: 2, linkNetnsid: 3 });

function resolve(
  pod: Parameters<typeof fakeLink>[0][],
  host: Parameters<typeof fakeLink>[0][],
  hints: string[] = [],
  name = 'eth0',
) {
  return resolveInterface(
    fakeRtnl(fakeNetns({ links: pod.map(fakeLink) })),
    fakeRtnl(fakeNetns({ links: host.map(fakeLink) })),
    name,
    hints,
  );
}

describe('resolveInterface', () => {
  it('is undefined when the pod has no link of that name', () => {
    expect(resolve([eth0], [hostVeth], [], 'net1')).toBeUndefined();
  });

  it('finds a veth and its host peer through IFLA_LINK when the peer points back', () => {
    expect(resolve([eth0], [hostVeth])).toEqual({
      name: 'eth0',
      index: 2,
      kind: 'veth',
      ipvlanMode: undefined,
      hostPeer: { index: 7, name: 'veth7' },
    });
  });

  it('reports the kind and ipvlan mode of a link that has no host peer', () => {
    const ipvl = fakeLink({ index: 4, name: 'eth0', kind: 'ipvlan', ipvlanMode: 'l3s', linkIndex: 7, linkNetnsid: 0 });
    expect(resolve([ipvl], [hostVeth])).toEqual({
      name: 'eth0',
      index: 4,
      kind: 'ipvlan',
      ipvlanMode: 'l3s',
      hostPeer: undefined,
    });
  });

  describe('gives no host peer', () => {
    it('for a veth whose peer is in its own netns (no IFLA_LINK_NETNSID)', () => {
      expect(resolve([{ ...eth0, linkNetnsid: undefined }], [hostVeth])?.hostPeer).toBeUndefined();
    });

    it('for a veth without IFLA_LINK', () => {
      expect(resolve([{ ...eth0, linkIndex: undefined }], [hostVeth], ['veth7'])?.hostPeer).toBeUndefined();
    });

    it('for a link that is no veth, even when the host link at its IFLA_LINK points back', () => {
      expect(resolve([{ ...eth0, kind: 'macvlan' }], [hostVeth], ['veth7'])?.hostPeer).toBeUndefined();
    });

    it('when the host link at that index is no veth', () => {
      expect(resolve([eth0], [{ ...hostVeth, kind: 'bridge' }])?.hostPeer).toBeUndefined();
    });

    it("when the host veth at that index is another pod's (its IFLA_LINK names another ifindex)", () => {
      expect(resolve([eth0], [{ ...hostVeth, linkIndex: 3 }])?.hostPeer).toBeUndefined();
    });

    it('when the host veth at that index has its peer in the host itself (no IFLA_LINK_NETNSID)', () => {
      expect(resolve([eth0], [{ ...hostVeth, linkNetnsid: undefined }])?.hostPeer).toBeUndefined();
    });

    it('when no host link has that index and no hint names the peer', () => {
      expect(resolve([eth0], [{ ...hostVeth, index: 8 }], ['veth9'])?.hostPeer).toBeUndefined();
      expect(resolve([eth0], [])?.hostPeer).toBeUndefined();
    });
  });

  describe('tries the host-side names of prevResult when IFLA_LINK does not lead to the peer', () => {
    // The index means another link in the host: the pod's netns numbers differ from the host's.
    const stranger = fakeLink({ index: 7, name: 'veth-other', linkIndex: 9, linkNetnsid: 1 });
    const realPeer = fakeLink({ index: 12, name: 'vethpod', linkIndex: 2, linkNetnsid: 3 });

    it('takes the first hint that is the peer', () => {
      expect(resolve([eth0], [stranger, realPeer, hostVeth], ['nope', 'vethpod'])?.hostPeer).toEqual({
        index: 12,
        name: 'vethpod',
      });
    });

    it('stops at the peer: a later hint does not replace it', () => {
      const alsoPointsBack = fakeLink({ index: 13, name: 'vethtwo', linkIndex: 2, linkNetnsid: 4 });
      expect(resolve([eth0], [stranger, realPeer, alsoPointsBack], ['vethpod', 'vethtwo'])?.hostPeer).toEqual({
        index: 12,
        name: 'vethpod',
      });
    });

    it('keeps the peer found through IFLA_LINK whatever the hints say', () => {
      expect(resolve([eth0], [hostVeth, realPeer], ['vethpod'])?.hostPeer).toEqual({ index: 7, name: 'veth7' });
    });

    it('gives none when no hint is the peer', () => {
      expect(resolve([eth0], [stranger, realPeer], ['veth-other'])?.hostPeer).toBeUndefined();
    });
  });
});
