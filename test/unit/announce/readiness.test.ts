// The readiness of one pod interface at one moment (snapshot, session.ts).
import { describe, expect, it } from 'vitest';
import { snapshot, type AnnounceTarget, type ResolvedInterface } from '../../../src/announce/session';
import { PortState } from '../../../src/wire/rtnetlink';
import { fakeAddress, fakeLink, fakeNetns, fakeRtnl, type FakeNetns } from '../../support/fake-rtnl';

const MAC = Buffer.from('0a580a580005', 'hex');
const iface: ResolvedInterface = {
  name: 'eth0',
  index: 2,
  kind: 'veth',
  ipvlanMode: undefined,
  hostPeer: { index: 7, name: 'veth7' },
};
const target: AnnounceTarget = { name: 'eth0', ipv4: ['10.88.0.5'], ipv6: ['fd00::5'] };

/** A pod whose eth0 is up with carrier and holds both addresses; the host's veth7 forwards. */
function world(): { pod: FakeNetns; host: FakeNetns } {
  return {
    pod: fakeNetns({
      links: [fakeLink({ index: 2, name: 'eth0', mac: MAC })],
      addresses: [fakeAddress(2, '10.88.0.5'), fakeAddress(2, 'fd00::5')],
    }),
    host: fakeNetns({ links: [fakeLink({ index: 7, name: 'veth7' })], ports: new Map([[7, PortState.Forwarding]]) }),
  };
}

function snap(w: { pod: FakeNetns; host: FakeNetns }, i: ResolvedInterface = iface, t: AnnounceTarget = target) {
  return snapshot(fakeRtnl(w.pod), fakeRtnl(w.host), i, t);
}

const V4 = Buffer.from([10, 88, 0, 5]);
const V6 = Buffer.from('fd000000000000000000000000000005', 'hex');

describe('snapshot', () => {
  it('is ready with the MAC and every planned address on the link', () => {
    expect(snap(world())).toEqual({
      state: 'ready',
      input: {
        index: 2,
        name: 'eth0',
        mac: MAC,
        noarp: false,
        ipv4: [V4],
        ipv6: [{ bytes: V6, optimistic: false }],
        skipped: [],
      },
    });
  });

  it('passes NOARP on', () => {
    const w = world();
    w.pod.links[0] = { ...w.pod.links[0]!, noarp: true };
    expect(snap(w)).toMatchObject({ state: 'ready', input: { noarp: true } });
  });

  describe('is gone', () => {
    it.each([
      ['when no link has the index', []],
      ['when the index now belongs to a link of another name', [fakeLink({ index: 2, name: 'net1' })]],
    ])('%s', (_when, links) => {
      const w = world();
      w.pod.links = links;
      expect(snap(w)).toEqual({ state: 'gone' });
    });
  });

  describe('waits, saying why', () => {
    it.each([
      ['while the link is down (and says nothing of the carrier then)', { up: false, running: false }, 'eth0 is down'],
      ['while the link has no carrier', { running: false }, 'eth0 has no carrier'],
    ])('%s', (_while, link, reason) => {
      const w = world();
      w.pod.links[0] = { ...w.pod.links[0]!, ...link };
      expect(snap(w)).toEqual({ state: 'waiting', reasons: [reason] });
    });

    it.each([
      [PortState.Disabled, 'disabled'],
      [PortState.Listening, 'listening'],
      [PortState.Learning, 'learning'],
      [PortState.Blocking, 'blocking'],
      [9, 'in state 9'],
    ])('while the bridge port is in state %i (%s)', (state, words) => {
      const w = world();
      w.host.ports.set(7, state);
      expect(snap(w)).toEqual({ state: 'waiting', reasons: [`bridge port veth7 is ${words}`] });
    });

    it('giving every reason, link first, then port, then a tentative address', () => {
      const w = world();
      w.pod.links[0] = { ...w.pod.links[0]!, running: false };
      w.host.ports.set(7, PortState.Learning);
      w.pod.addresses[1] = fakeAddress(2, 'fd00::5', { tentative: true });
      expect(snap(w)).toEqual({
        state: 'waiting',
        reasons: ['eth0 has no carrier', 'bridge port veth7 is learning', 'fd00::5 is tentative (DAD in progress)'],
      });
    });

    it('while the link has no Ethernet address, once nothing else is missing', () => {
      const w = world();
      w.pod.links[0] = { ...w.pod.links[0]!, mac: undefined };
      expect(snap(w)).toEqual({ state: 'waiting', reasons: ['eth0 has no Ethernet address'] });
      w.pod.links[0] = { ...w.pod.links[0]!, mac: Buffer.alloc(20, 1) }; // InfiniBand
      expect(snap(w)).toEqual({ state: 'waiting', reasons: ['eth0 has no Ethernet address'] });
      w.pod.links[0] = { ...w.pod.links[0]!, up: false };
      expect(snap(w)).toEqual({ state: 'waiting', reasons: ['eth0 is down'] });
    });
  });

  describe('does not wait for a bridge port', () => {
    it('when the host peer is no bridge port', () => {
      const w = world();
      w.host.ports.clear();
      expect(snap(w)).toMatchObject({ state: 'ready' });
    });

    it('when there is no host peer (macvlan, ipvlan), whatever the host holds', () => {
      const w = world();
      w.host.ports.set(2, PortState.Blocking);
      w.host.ports.set(7, PortState.Blocking);
      expect(snap(w, { ...iface, hostPeer: undefined })).toMatchObject({ state: 'ready' });
    });
  });

  describe('leaves out, naming each, and announces the rest', () => {
    it('planned addresses that are not on the link (on another link does not count)', () => {
      const w = world();
      w.pod.addresses = [fakeAddress(3, '10.88.0.5'), fakeAddress(2, '10.88.0.6'), fakeAddress(2, 'fd00::5')];
      expect(snap(w, iface, { name: 'eth0', ipv4: ['10.88.0.5', '10.88.0.6'], ipv6: ['fd00::5', 'fd00::6'] })).toEqual({
        state: 'ready',
        input: {
          index: 2,
          name: 'eth0',
          mac: MAC,
          noarp: false,
          ipv4: [Buffer.from([10, 88, 0, 6])],
          ipv6: [{ bytes: V6, optimistic: false }],
          skipped: ['10.88.0.5 (not on eth0)', 'fd00::6 (not on eth0)'],
        },
      });
    });

    it('IPv6 addresses whose duplicate address detection failed, even while also flagged tentative', () => {
      const w = world();
      w.pod.addresses[1] = fakeAddress(2, 'fd00::5', { dadFailed: true, tentative: true });
      expect(snap(w)).toMatchObject({
        state: 'ready',
        input: { ipv6: [], skipped: ['fd00::5 (duplicate address detection failed)'] },
      });
    });
  });

  it('marks optimistic IPv6 addresses (the NA then goes without the O flag) and announces them at once', () => {
    const w = world();
    w.pod.addresses[1] = fakeAddress(2, 'fd00::5', { optimistic: true });
    expect(snap(w)).toMatchObject({ state: 'ready', input: { ipv6: [{ bytes: V6, optimistic: true }] } });
  });
});
