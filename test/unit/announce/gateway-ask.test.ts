// One ask of the gateway check (gateway-ask.ts): which sources ask which
// gateways, the receivers it opens, and its answers timed from round 1.
import { describe, expect, it } from 'vitest';
import { askReplies, gatewayTargets, openAsk } from '../../../src/announce/gateway-ask';
import type { RoundInput } from '../../../src/announce/session';
import type { SocketOpener } from '../../../src/announce/session';
import type { FrameReceiver } from '../../../src/sys/packet-socket';
import { ETHERTYPE_ARP, ETHERTYPE_IPV6 } from '../../../src/wire/ethernet';
import { parseIPv4, parseIPv6 } from '../../../src/wire/ip';

const MAC = Buffer.from('0a580a580005', 'hex');
const GW_MAC = Buffer.from('525400123456', 'hex');

function input(extra: Partial<RoundInput> = {}): RoundInput {
  return {
    index: 2,
    name: 'eth0',
    mac: MAC,
    noarp: false,
    ipv4: [parseIPv4('10.88.0.5')],
    ipv6: [
      { bytes: parseIPv6('fd00::5'), optimistic: false },
      { bytes: parseIPv6('fd00::6'), optimistic: true },
    ],
    skipped: [],
    ...extra,
  };
}
const BOTH = [
  { interface: 'eth0', gateway: '10.88.0.1' },
  { interface: 'eth0', gateway: 'fd00::1' },
];

describe('gatewayTargets', () => {
  it('asks each family from its own sources, leaving optimistic IPv6 addresses out', () => {
    expect(gatewayTargets([input()], BOTH)).toEqual([
      {
        index: 2,
        name: 'eth0',
        mac: MAC,
        ipv4: [parseIPv4('10.88.0.5')],
        ipv6: [parseIPv6('fd00::5')],
        gateways: { ipv4: [parseIPv4('10.88.0.1')], ipv6: [parseIPv6('fd00::1')] },
      },
    ]);
  });

  it('an interface whose IPv6 addresses are all optimistic asks no IPv6 gateway', () => {
    const optimistic = input({ ipv6: [{ bytes: parseIPv6('fd00::6'), optimistic: true }] });
    const [t] = gatewayTargets([optimistic], BOTH);
    expect(t).toMatchObject({ ipv6: [], gateways: { ipv4: [parseIPv4('10.88.0.1')], ipv6: [] } });
  });

  it('an IFF_NOARP interface asks nothing over ARP', () => {
    const [t] = gatewayTargets([input({ noarp: true })], BOTH);
    expect(t).toMatchObject({ ipv4: [], ipv6: [parseIPv6('fd00::5')], gateways: { ipv4: [] } });
  });

  it('an interface without a gateway of a family asks nothing in it', () => {
    const [t] = gatewayTargets([input()], [{ interface: 'eth0', gateway: '10.88.0.1' }]);
    expect(t).toMatchObject({ ipv4: [parseIPv4('10.88.0.5')], ipv6: [], gateways: { ipv6: [] } });
    const [u] = gatewayTargets([input()], [{ interface: 'eth0', gateway: 'fd00::1' }]);
    expect(u).toMatchObject({ ipv4: [], ipv6: [parseIPv6('fd00::5')], gateways: { ipv4: [] } });
  });

  it("another interface's gateways are not this one's; without any it asks nothing", () => {
    expect(gatewayTargets([input()], [{ interface: 'net1', gateway: '10.88.0.1' }])).toEqual([]);
  });

  it('a family without a source asks none of its gateways', () => {
    const [t] = gatewayTargets([input({ ipv4: [] })], BOTH);
    expect(t).toMatchObject({ gateways: { ipv4: [], ipv6: [parseIPv6('fd00::1')] } });
  });
});

/** An opener that records each receivers() call; `failOn` throws for that ethertype. */
function opener(failOn?: number) {
  const calls: { ifindexes: number[]; ethertype: number }[] = [];
  const closed: number[] = [];
  let fd = 70;
  const receivers = (_netns: string, ifindexes: readonly number[], ethertype: number): FrameReceiver[] => {
    if (ethertype === failOn) throw new Error('socket(AF_PACKET): EPERM');
    calls.push({ ifindexes: [...ifindexes], ethertype });
    return ifindexes.map((ifindex) => {
      const mine = fd++;
      return { ifindex, fd: mine, receive: () => undefined, close: () => void closed.push(mine), release: () => mine };
    });
  };
  const open: SocketOpener = { receivers, pod: () => expect.fail('no pod here'), host: () => expect.fail('no host') };
  return { open, calls, closed };
}

const net1 = (extra: Partial<RoundInput> = {}): RoundInput =>
  input({ index: 3, name: 'net1', ipv4: [parseIPv4('10.89.0.7')], ipv6: [], ...extra });
const GATEWAYS = [...BOTH, { interface: 'net1', gateway: '10.89.0.1' }];

describe('openAsk', () => {
  it('opens ARP receivers for the IPv4 askers and IPv6 receivers for the IPv6 ones', () => {
    const { open, calls } = opener();
    const v6Only = input({ ipv4: [] });
    const ask = openAsk(open, '/run/netns/pod', gatewayTargets([v6Only, net1()], GATEWAYS), 1000, 5000);
    expect(calls).toEqual([
      { ifindexes: [3], ethertype: ETHERTYPE_ARP },
      { ifindexes: [2], ethertype: ETHERTYPE_IPV6 },
    ]);
    expect(ask).toMatchObject({ startedAt: 5000 });
    expect(ask!.requests.map((r) => r.index)).toEqual([2, 3]);
    expect(ask!.receivers.map((r) => r.ifindex)).toEqual([3, 2]);
  });

  it('closes the ARP receivers when the IPv6 ones cannot be opened', () => {
    const { open, closed } = opener(ETHERTYPE_IPV6);
    expect(() => openAsk(open, '/run/netns/pod', gatewayTargets([input(), net1()], GATEWAYS), 1000, 0)).toThrow(
      'EPERM',
    );
    expect(closed).toEqual([70, 71]);
  });

  it('opens no ARP receiver for an ask over IPv6 alone', () => {
    const { open, calls } = opener();
    const ask = openAsk(open, '/run/netns/pod', gatewayTargets([input({ ipv4: [] })], BOTH), 1000, 0);
    expect(calls).toEqual([{ ifindexes: [2], ethertype: ETHERTYPE_IPV6 }]);
    expect(ask!.receivers.map((r) => r.ifindex)).toEqual([2]);
  });

  it('is undefined, with nothing opened, when no target asks anything', () => {
    const { open, calls } = opener();
    expect(openAsk(open, '/run/netns/pod', [], 1000, 0)).toBeUndefined();
    expect(calls).toEqual([]);
  });
});

describe('askReplies', () => {
  it("times each answer from round 1, not from the ask's start", () => {
    const { open } = opener();
    const ask = openAsk(open, '/run/netns/pod', gatewayTargets([input({ ipv6: [] })], BOTH), 1000, 5000)!;
    // The gateway's ARP reply (op 2) to the pod: 10.88.0.1 is at GW_MAC (52:54:00:12:34:56), to 10.88.0.5 at MAC.
    const arp = Buffer.from('0806 0001 0800 06 04 0002'.replace(/ /g, ''), 'hex');
    const reply = Buffer.concat([MAC, GW_MAC, arp, GW_MAC, parseIPv4('10.88.0.1'), MAC, parseIPv4('10.88.0.5')]);
    ask.window.receive(2, reply, 5030);
    expect(askReplies(ask, 4000)).toEqual([
      { interface: 'eth0', gateway: '10.88.0.1', mac: '52:54:00:12:34:56', afterMs: 1030 },
    ]);
  });
});
