// The gateway check's window (GatewayWindow, gateway-ask.ts): the requests it asks, the answers it takes, its time.
import { describe, expect, it } from 'vitest';
import { GatewayWindow, type GatewayTarget } from '../../../src/announce/gateway-ask';
import type { OutgoingFrame } from '../../../src/announce/round';
import { arpRequest, gratuitousArp } from '../../../src/wire/arp';
import { neighborSolicitation, unsolicitedNeighborAdvert } from '../../../src/wire/ndp';

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');

const POD = '02420a580005'; // eth0
const NET1 = '02420a590007'; // net1
const GW_MAC = '525400123456';
const OTHER_MAC = '5254000000aa';
const V4 = { pod: '0a580005', pod2: '0a580006', gw: '0a580001', gw2: '0a5800fe', other: '0a580009' };
const V4_NET1 = { pod: '0a590007', gw: '0a590001' };
const V6 = {
  pod: 'fd000088000000000000000000000005',
  gw: 'fd000088000000000000000000000001',
  other: 'fd000088000000000000000000000009',
};

const eth0: GatewayTarget = {
  index: 2,
  name: 'eth0',
  mac: bytes(POD),
  ipv4: [bytes(V4.pod), bytes(V4.pod2)],
  ipv6: [bytes(V6.pod)],
  gateways: { ipv4: [bytes(V4.gw), bytes(V4.gw2)], ipv6: [bytes(V6.gw)] },
};
const net1: GatewayTarget = {
  index: 3,
  name: 'net1',
  mac: bytes(NET1),
  ipv4: [bytes(V4_NET1.pod)],
  ipv6: [],
  gateways: { ipv4: [bytes(V4_NET1.gw)], ipv6: [] },
};
const v4Only = (t: GatewayTarget): GatewayTarget => ({ ...t, ipv6: [], gateways: { ...t.gateways, ipv6: [] } });

/** An ARP packet as a host sends it (op 2: unicast to the asker), hand-assembled from RFC 826. */
function arp(f: { op: 1 | 2; sha: string; spa: string; tha: string; tpa: string; dst?: string }): Buffer {
  return bytes(`${f.dst ?? f.tha} ${f.sha} 0806 0001 0800 06 04 000${f.op} ${f.sha} ${f.spa} ${f.tha} ${f.tpa}`);
}

/** The gateway's reply to the pod's request (what Linux sends). */
const reply = (sha: string, spa: string, tpa: string, tha = POD): Buffer => arp({ op: 2, sha, spa, tha, tpa });

/**
 * An NA from `ethSource` for `target`, flags S (and O), with a target link-layer option when `tll` is given; hand-
 * assembled from RFC 4861 §4.4. Its checksum is left zero: the window does not verify checksums.
 */
function na(f: { target: string; solicited: boolean; ethSource?: string; tll?: string }): Buffer {
  const option = f.tll ? `0201${f.tll}` : '';
  const length = (24 + option.length / 2).toString(16).padStart(4, '0');
  const flags = f.solicited ? '60' : '20';
  const ethSource = f.ethSource ?? GW_MAC;
  return bytes(`${POD} ${ethSource} 86dd 60000000 ${length} 3a ff ${f.target} ${V6.pod} 88 00 0000 ${flags}000000
    ${f.target} ${option}`);
}

const describeFrames = (frames: readonly OutgoingFrame[]) =>
  frames.map((f) => `${f.index} ${f.name} ${f.frame.length}`);

describe('GatewayWindow.requests', () => {
  it('asks each gateway from each source of its family: an ARP request or an NS per pair, on its interface', () => {
    const window = new GatewayWindow([eth0, net1], 1000, 0);
    const frames = window.requests();
    const expected = [
      arpRequest({ mac: bytes(POD), ip: bytes(V4.pod), targetIp: bytes(V4.gw) }),
      arpRequest({ mac: bytes(POD), ip: bytes(V4.pod), targetIp: bytes(V4.gw2) }),
      arpRequest({ mac: bytes(POD), ip: bytes(V4.pod2), targetIp: bytes(V4.gw) }),
      arpRequest({ mac: bytes(POD), ip: bytes(V4.pod2), targetIp: bytes(V4.gw2) }),
      neighborSolicitation({ mac: bytes(POD), ip: bytes(V6.pod), target: bytes(V6.gw) }),
      arpRequest({ mac: bytes(NET1), ip: bytes(V4_NET1.pod), targetIp: bytes(V4_NET1.gw) }),
    ];
    expect(frames.map((f) => [f.index, f.name, f.frame.toString('hex')])).toEqual(
      expected.map((frame, i) => (i < 5 ? [2, 'eth0', frame.toString('hex')] : [3, 'net1', frame.toString('hex')])),
    );
  });

  it('asks no gateway of a family without a source, and nothing without gateways', () => {
    const noV4Source = { ...eth0, ipv4: [] };
    expect(describeFrames(new GatewayWindow([noV4Source], 1000, 0).requests())).toEqual(['2 eth0 86']);
    const none = { ...eth0, gateways: { ipv4: [], ipv6: [] } };
    expect(new GatewayWindow([none], 1000, 0).requests()).toEqual([]);
    expect(new GatewayWindow([], 1000, 0).requests()).toEqual([]);
  });
});

describe('GatewayWindow: answers', () => {
  it('takes an ARP reply from a gateway to a source: the ARP sender MAC, the time since the window opened', () => {
    const window = new GatewayWindow([eth0], 1000, 5000);
    window.receive(2, reply(GW_MAC, V4.gw, V4.pod2), 5012);
    expect(window.answers()).toEqual([
      { interface: 'eth0', gateway: '10.88.0.1', mac: '52:54:00:12:34:56', afterMs: 12 },
    ]);
  });

  it('names the ARP sender MAC, not the Ethernet source', () => {
    const window = new GatewayWindow([eth0], 1000, 0);
    const proxied = bytes(`${POD} ${OTHER_MAC} 0806 0001 0800 06 04 0002 ${GW_MAC} ${V4.gw} ${POD} ${V4.pod}`);
    window.receive(2, proxied, 1);
    expect(window.answers().map((a) => a.mac)).toEqual(['52:54:00:12:34:56']);
  });

  it('reads a reply padded to 60 bytes', () => {
    const window = new GatewayWindow([eth0], 1000, 0);
    window.receive(2, Buffer.concat([reply(GW_MAC, V4.gw, V4.pod), Buffer.alloc(18)]), 1);
    expect(window.answers().map((a) => a.gateway)).toEqual(['10.88.0.1']);
  });

  it("takes a solicited NA for a gateway: the target link-layer option's MAC, else the Ethernet source", () => {
    const withOption = new GatewayWindow([eth0], 1000, 0);
    withOption.receive(2, na({ target: V6.gw, solicited: true, ethSource: OTHER_MAC, tll: GW_MAC }), 7);
    expect(withOption.answers()).toEqual([
      { interface: 'eth0', gateway: 'fd00:88::1', mac: '52:54:00:12:34:56', afterMs: 7 },
    ]);
    const bare = new GatewayWindow([eth0], 1000, 0);
    bare.receive(2, na({ target: V6.gw, solicited: true, ethSource: OTHER_MAC }), 9);
    expect(bare.answers()).toEqual([
      { interface: 'eth0', gateway: 'fd00:88::1', mac: '52:54:00:00:00:aa', afterMs: 9 },
    ]);
  });

  it('counts the first answer per interface and gateway', () => {
    const window = new GatewayWindow([eth0], 1000, 0);
    window.receive(2, reply(GW_MAC, V4.gw, V4.pod), 3);
    window.receive(2, reply(OTHER_MAC, V4.gw, V4.pod2), 4);
    window.receive(2, na({ target: V6.gw, solicited: true, tll: OTHER_MAC }), 5);
    window.receive(2, na({ target: V6.gw, solicited: true, tll: GW_MAC }), 6);
    expect(window.answers().map((a) => [a.gateway, a.mac, a.afterMs])).toEqual([
      ['10.88.0.1', '52:54:00:12:34:56', 3],
      ['fd00:88::1', '52:54:00:00:00:aa', 5],
    ]);
  });

  it('keeps the same gateway apart on two interfaces', () => {
    const shared = { ...net1, gateways: { ipv4: [bytes(V4.gw)], ipv6: [] } };
    const window = new GatewayWindow([v4Only(eth0), shared], 1000, 0);
    window.receive(3, reply(GW_MAC, V4.gw, V4_NET1.pod, NET1), 2);
    expect(window.answers()).toEqual([
      { interface: 'net1', gateway: '10.88.0.1', mac: '52:54:00:12:34:56', afterMs: 2 },
    ]);
  });

  it.each([
    [
      'an ARP request from the gateway for a source',
      arp({ op: 1, sha: GW_MAC, spa: V4.gw, tha: '0'.repeat(12), tpa: V4.pod, dst: 'ff'.repeat(6) }),
    ],
    [
      "the gateway's gratuitous reply",
      arp({ op: 2, sha: GW_MAC, spa: V4.gw, tha: GW_MAC, tpa: V4.gw, dst: 'ff'.repeat(6) }),
    ],
    ['a reply from a host that is not a gateway', reply(OTHER_MAC, V4.other, V4.pod)],
    ["a reply from net1's gateway on eth0", reply(GW_MAC, V4_NET1.gw, V4.pod)],
    ['a reply from the gateway to an address that is not a source', reply(GW_MAC, V4.gw, V4.other)],
    ['our own request, seen going out', arpRequest({ mac: bytes(POD), ip: bytes(V4.pod), targetIp: bytes(V4.gw) })],
    ['an NA that is not solicited', na({ target: V6.gw, solicited: false, tll: GW_MAC })],
    [
      "the gateway's unsolicited NA",
      unsolicitedNeighborAdvert({ mac: bytes(GW_MAC), ip: bytes(V6.gw), router: true, override: true }),
    ],
    ['a solicited NA for a host that is not a gateway', na({ target: V6.other, solicited: true, tll: OTHER_MAC })],
    ['our own NS, seen going out', neighborSolicitation({ mac: bytes(POD), ip: bytes(V6.pod), target: bytes(V6.gw) })],
    ['a gratuitous ARP of the gateway', gratuitousArp({ mac: bytes(GW_MAC), ip: bytes(V4.gw), op: 'request' })],
    ['a frame that is neither ARP nor an NA', bytes('00112233')],
  ])('ignores %s', (_, frame) => {
    const window = new GatewayWindow([eth0, net1], 1000, 0);
    window.receive(2, frame, 1);
    expect(window.answers()).toEqual([]);
  });

  it('ignores answers on another interface than the one that asked, or on one not asked from', () => {
    const window = new GatewayWindow([eth0, net1], 1000, 0);
    window.receive(3, reply(GW_MAC, V4.gw, V4.pod), 1); // eth0's gateway, heard on net1
    window.receive(3, na({ target: V6.gw, solicited: true, tll: GW_MAC }), 1);
    window.receive(9, reply(GW_MAC, V4.gw, V4.pod), 1);
    window.receive(2, reply(GW_MAC, V4_NET1.gw, V4_NET1.pod, NET1), 1); // net1's gateway, heard on eth0
    expect(window.answers()).toEqual([]);
  });
});

describe('GatewayWindow: time', () => {
  it('ends when its time is up, and waits until then', () => {
    const window = new GatewayWindow([eth0], 300, 1000);
    expect(window.finished(1000)).toBe(false);
    expect(window.waitMs(1000)).toBe(300);
    expect(window.waitMs(1250)).toBe(50);
    expect(window.finished(1299)).toBe(false);
    expect(window.finished(1300)).toBe(true);
    expect(window.waitMs(1300)).toBe(0);
    expect(window.waitMs(5000)).toBe(0);
  });

  it('ends early once every gateway on every interface answered', () => {
    const window = new GatewayWindow([eth0, net1], 1000, 0);
    window.receive(2, reply(GW_MAC, V4.gw, V4.pod), 10);
    window.receive(2, reply(GW_MAC, V4.gw2, V4.pod), 11);
    window.receive(2, na({ target: V6.gw, solicited: true }), 12);
    expect(window.finished(20)).toBe(false);
    window.receive(3, reply(GW_MAC, V4_NET1.gw, V4_NET1.pod, NET1), 30);
    expect(window.finished(30)).toBe(true);
    expect(window.waitMs(30)).toBe(0);
  });

  it('waits for the gateways it asked, not one no source can ask, whatever answers the others have', () => {
    const window = new GatewayWindow([{ ...eth0, ipv6: [] }], 1000, 0);
    window.receive(2, na({ target: V6.gw, solicited: true }), 10); // not asked: no IPv6 source
    window.receive(2, reply(GW_MAC, V4.gw, V4.pod), 11);
    expect(window.finished(11)).toBe(false);
    window.receive(2, reply(GW_MAC, V4.gw2, V4.pod), 12);
    expect(window.finished(12)).toBe(true);
  });

  it('does not wait for IPv4 gateways without an IPv4 source either', () => {
    const window = new GatewayWindow([{ ...eth0, ipv4: [] }], 1000, 0);
    window.receive(2, na({ target: V6.gw, solicited: true }), 10);
    expect(window.finished(10)).toBe(true);
  });

  it('is over at once without gateways', () => {
    const window = new GatewayWindow([{ ...eth0, gateways: { ipv4: [], ipv6: [] } }], 1000, 0);
    expect(window.finished(0)).toBe(true);
    expect(window.waitMs(0)).toBe(0);
  });
});
