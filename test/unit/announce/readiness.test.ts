// Readiness of a pod interface, from fake rtnetlink views of the pod and the
// host: the bridge port must forward, the link be up with carrier, and no
// planned IPv6 address be tentative.
import { describe, expect, it } from 'vitest';
import type { ResolvedInterface } from '../../../src/announce/pod-interface';
import { snapshot, type AnnounceTarget } from '../../../src/announce/readiness';
import type { Rtnl } from '../../../src/sys/rtnl';
import { PortState, type AddressInfo, type LinkInfo } from '../../../src/wire/rtnetlink';

const MAC = Buffer.from('0a580a580005', 'hex');
const V4 = Buffer.from([10, 88, 0, 5]);
const V6 = Buffer.from('fd000088000000000000000000000005', 'hex');
const TARGET: AnnounceTarget = { name: 'eth0', ipv4: ['10.88.0.5'], ipv6: ['fd00:88::5'] };
const IFACE: ResolvedInterface = { name: 'eth0', index: 2, kind: 'veth', ipvlanMode: undefined, hostPeer: { index: 14, name: 'veth1234' } };

function eth0(fields: Partial<LinkInfo> = {}): LinkInfo {
  return { index: 2, name: 'eth0', mac: MAC, up: true, running: true, noarp: false, linkIndex: 14, linkNetnsid: 0, kind: 'veth', ipvlanMode: undefined, portState: undefined, ...fields };
}

function address(family: 4 | 6, bytes: Buffer, flags: Partial<AddressInfo> = {}): AddressInfo {
  return { index: 2, family, bytes, prefixLength: family === 4 ? 24 : 64, tentative: false, dadFailed: false, optimistic: false, ...flags };
}

/** The pod's view: `link` and its addresses. */
function pod(link: LinkInfo | undefined, addresses: AddressInfo[] = [address(4, V4), address(6, V6)]): Rtnl {
  return { linkByIndex: (i: number) => (link?.index === i ? link : undefined), addresses: () => addresses } as unknown as Rtnl;
}

/** The host's view: the port state of ifindex 14, and which indexes were asked about. */
function host(state: number | undefined) {
  const asked: number[] = [];
  const rtnl = { bridgePortState: (i: number) => (asked.push(i), i === 14 ? state : undefined) } as unknown as Rtnl;
  return { rtnl, asked };
}

describe('snapshot', () => {
  const notForwarding: [string, number][] = [
    ['disabled', PortState.Disabled],
    ['listening', PortState.Listening],
    ['learning', PortState.Learning],
    ['blocking', PortState.Blocking],
  ];
  it.each(notForwarding)('waits while the host peer bridge port is %s', (name, state) => {
    const h = host(state);
    expect(snapshot(pod(eth0()), h.rtnl, IFACE, TARGET)).toEqual({ state: 'waiting', reasons: [`bridge port veth1234 is ${name}`] });
    expect(h.asked).toEqual([14]);
  });

  it('names a port state it does not know by its number', () => {
    expect(snapshot(pod(eth0()), host(7).rtnl, IFACE, TARGET)).toEqual({ state: 'waiting', reasons: ['bridge port veth1234 is in state 7'] });
  });

  it('is ready once the port forwards, with the MAC and the addresses on the link', () => {
    expect(snapshot(pod(eth0()), host(PortState.Forwarding).rtnl, IFACE, TARGET)).toEqual({
      state: 'ready',
      input: { index: 2, name: 'eth0', mac: MAC, noarp: false, ipv4: [V4], ipv6: [{ bytes: V6, optimistic: false }], skipped: [] },
    });
  });

  it('asks no port state without a host peer, and a host peer that is no bridge port does not hold it back', () => {
    const h = host(PortState.Blocking);
    expect(snapshot(pod(eth0()), h.rtnl, { ...IFACE, hostPeer: undefined }, TARGET).state).toBe('ready');
    expect(h.asked).toEqual([]);
    expect(snapshot(pod(eth0()), host(undefined).rtnl, IFACE, TARGET).state).toBe('ready');
  });

  it('waits for the link to be up, then for its carrier, and names every reason at once', () => {
    const blocking = host(PortState.Blocking).rtnl;
    expect(snapshot(pod(eth0({ up: false, running: false })), blocking, IFACE, TARGET)).toEqual({
      state: 'waiting',
      reasons: ['eth0 is down', 'bridge port veth1234 is blocking'],
    });
    expect(snapshot(pod(eth0({ running: false })), host(PortState.Forwarding).rtnl, IFACE, TARGET)).toEqual({ state: 'waiting', reasons: ['eth0 has no carrier'] });
  });

  it('waits while a planned IPv6 address is tentative; leaves out a DAD-failed or absent one; keeps an optimistic one', () => {
    const fwd = host(PortState.Forwarding).rtnl;
    expect(snapshot(pod(eth0(), [address(4, V4), address(6, V6, { tentative: true })]), fwd, IFACE, TARGET)).toEqual({
      state: 'waiting',
      reasons: ['fd00:88::5 is tentative (DAD in progress)'],
    });
    const failed = snapshot(pod(eth0(), [address(4, V4), address(6, V6, { dadFailed: true })]), fwd, IFACE, TARGET);
    expect(failed).toMatchObject({ state: 'ready', input: { ipv6: [], skipped: ['fd00:88::5 (duplicate address detection failed)'] } });
    const absent = snapshot(pod(eth0(), [address(6, V6, { optimistic: true })]), fwd, IFACE, TARGET);
    expect(absent).toMatchObject({ state: 'ready', input: { ipv4: [], ipv6: [{ bytes: V6, optimistic: true }], skipped: ['10.88.0.5 (not on eth0)'] } });
  });

  it('is gone when the index no longer names the interface', () => {
    const fwd = host(PortState.Forwarding).rtnl;
    expect(snapshot(pod(undefined), fwd, IFACE, TARGET)).toEqual({ state: 'gone' });
    expect(snapshot(pod(eth0({ name: 'net1' })), fwd, IFACE, TARGET)).toEqual({ state: 'gone' });
  });
});
