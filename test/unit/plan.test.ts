import { describe, it, expect } from 'vitest';
import {
  burstSchedule,
  burstSpanMs,
  MAX_BURST_SPAN_MS,
  planAnnouncement,
  roundFrames,
  type PlanOptions,
  type PlanResult,
} from '../../src/plan';
import { gratuitousArp } from '../../src/wire/arp';
import { unsolicitedNeighborAdvert } from '../../src/wire/ndp';

const NETNS = '/var/run/netns/pod';
const ENV = { netns: NETNS, ifname: 'eth0' };

const OPTIONS: PlanOptions = {
  ipv4: true,
  ipv6: true,
  arpOp: 'request',
  mac: 'keep',
  macPrefix: '0a:58',
  count: 3,
  intervalMs: 1000,
  backoff: 1,
};

const options = (over: Partial<PlanOptions> = {}): PlanOptions => ({ ...OPTIONS, ...over });

/** What the bridge plugin returns: bridge, host veth, then the pod side. */
const BRIDGE_RESULT: PlanResult = {
  interfaces: [
    { name: 'cni-t0', mac: '3a:1f:0c:55:20:01' },
    { name: 'veth6f1e2a40', mac: '86:03:17:7a:eb:6e' },
    { name: 'eth0', mac: '02:42:0a:58:00:05', sandbox: NETNS },
  ],
  ips: [
    { address: '10.88.0.5', family: 4, interface: 2 },
    { address: 'fd00:88::5', family: 6, interface: 2 },
  ],
};

const hex = (b: Buffer | undefined): string | undefined => b?.toString('hex');

describe('burstSchedule', () => {
  it('is empty for count 0', () => {
    expect(burstSchedule(0, 400, 1)).toEqual([]);
  });

  it('is a single round at 0 for count 1', () => {
    expect(burstSchedule(1, 400, 2)).toEqual([0]);
  });

  it('spaces rounds evenly with backoff 1', () => {
    expect(burstSchedule(3, 1000, 1)).toEqual([0, 1000, 2000]);
    expect(burstSchedule(4, 400, 1)).toEqual([0, 400, 800, 1200]);
  });

  it('doubles each gap with backoff 2', () => {
    expect(burstSchedule(3, 1000, 2)).toEqual([0, 1000, 3000]);
    expect(burstSchedule(4, 400, 2)).toEqual([0, 400, 1200, 2800]);
  });

  it('rounds fractional offsets to whole ms', () => {
    // gaps 333, 499.5 → offsets 0, 333, 832.5
    expect(burstSchedule(3, 333, 1.5)).toEqual([0, 333, 833]);
  });
});

describe('burstSpanMs', () => {
  it('is the offset of the last round, unrounded', () => {
    expect(burstSpanMs(0, 1000, 1)).toBe(0);
    expect(burstSpanMs(1, 1000, 4)).toBe(0);
    expect(burstSpanMs(3, 1000, 1)).toBe(2000);
    expect(burstSpanMs(4, 400, 2)).toBe(2800);
    expect(burstSpanMs(3, 333, 1.5)).toBe(832.5);
  });

  it('measures a 60-day burst (count 10, intervalMs 60000, backoff 4) against the 10-minute cap', () => {
    // 60000 × (4^9 − 1) / 3 ms
    expect(burstSpanMs(10, 60000, 4)).toBe(5_242_860_000);
    expect(MAX_BURST_SPAN_MS).toBe(600_000);
    expect(burstSpanMs(10, 60000, 1)).toBe(540_000);
  });
});

describe('planAnnouncement: pod interfaces', () => {
  it('takes the interfaces whose sandbox is the pod netns, with their result index', () => {
    const plan = planAnnouncement(OPTIONS, BRIDGE_RESULT, ENV);
    expect(plan.interfaces.map((i) => [i.name, i.resultIndex])).toEqual([['eth0', 2]]);
    expect(plan.interfaces[0]!.ipv4).toEqual(['10.88.0.5']);
    expect(plan.interfaces[0]!.ipv6).toEqual(['fd00:88::5']);
  });

  it('ignores interfaces sandboxed in another netns', () => {
    const result: PlanResult = {
      interfaces: [
        { name: 'eth0', sandbox: '/var/run/netns/other' },
        { name: 'net1', sandbox: NETNS },
      ],
      ips: [
        { address: '10.88.0.7', family: 4, interface: 0 },
        { address: '10.89.0.5', family: 4, interface: 1 },
      ],
    };
    const plan = planAnnouncement(OPTIONS, result, ENV);
    expect(plan.interfaces.map((i) => [i.name, i.resultIndex, i.addresses])).toEqual([['net1', 1, ['10.89.0.5']]]);
  });

  it('falls back to CNI_IFNAME when no interface has a sandbox', () => {
    const result: PlanResult = {
      interfaces: [],
      ips: [{ address: '10.88.0.5', family: 4 }],
    };
    const plan = planAnnouncement(OPTIONS, result, ENV);
    expect(plan.interfaces).toEqual([
      {
        name: 'eth0',
        resultIndex: undefined,
        addresses: ['10.88.0.5'],
        ipv4: ['10.88.0.5'],
        ipv6: [],
        targetMac: undefined,
        gateways: { ipv4: [], ipv6: [] },
      },
    ]);
  });

  it('in the fallback, finds the CNI_IFNAME entry among sandbox-less interfaces by name', () => {
    const result: PlanResult = {
      interfaces: [{ name: 'veth1' }, { name: 'eth0' }],
      ips: [
        { address: '10.88.0.5', family: 4, interface: 1 },
        { address: '10.88.0.6', family: 4, interface: 0 },
      ],
    };
    const plan = planAnnouncement(OPTIONS, result, ENV);
    expect(plan.interfaces.map((i) => [i.name, i.resultIndex, i.addresses])).toEqual([['eth0', 1, ['10.88.0.5']]]);
  });

  it('assigns addresses by their interface index, keeping prevResult order', () => {
    const result: PlanResult = {
      interfaces: [
        { name: 'eth0', sandbox: NETNS },
        { name: 'net1', sandbox: NETNS },
      ],
      ips: [
        { address: '10.89.0.5', family: 4, interface: 1 },
        { address: '10.88.0.5', family: 4, interface: 0 },
        { address: 'fd00:89::5', family: 6, interface: 1 },
        { address: '10.89.0.6', family: 4, interface: 1 },
      ],
    };
    const plan = planAnnouncement(OPTIONS, result, ENV);
    expect(
      plan.interfaces.map((i) => ({
        name: i.name,
        index: i.resultIndex,
        addresses: i.addresses,
        ipv4: i.ipv4,
        ipv6: i.ipv6,
      })),
    ).toEqual([
      { name: 'eth0', index: 0, addresses: ['10.88.0.5'], ipv4: ['10.88.0.5'], ipv6: [] },
      {
        name: 'net1',
        index: 1,
        addresses: ['10.89.0.5', 'fd00:89::5', '10.89.0.6'],
        ipv4: ['10.89.0.5', '10.89.0.6'],
        ipv6: ['fd00:89::5'],
      },
    ]);
  });

  it('gives addresses without an interface index to the single pod interface', () => {
    const result: PlanResult = {
      interfaces: [{ name: 'cni-t0' }, { name: 'eth0', sandbox: NETNS }],
      ips: [
        { address: '10.88.0.5', family: 4 },
        { address: 'fd00:88::5', family: 6 },
      ],
    };
    const plan = planAnnouncement(OPTIONS, result, ENV);
    expect(plan.interfaces.map((i) => [i.name, i.addresses])).toEqual([['eth0', ['10.88.0.5', 'fd00:88::5']]]);
  });

  it('gives addresses without an interface index to nobody when there are several pod interfaces', () => {
    const result: PlanResult = {
      interfaces: [
        { name: 'eth0', sandbox: NETNS },
        { name: 'net1', sandbox: NETNS },
      ],
      ips: [
        { address: '10.88.0.5', family: 4 },
        { address: '10.89.0.5', family: 4, interface: 1 },
      ],
    };
    const plan = planAnnouncement(OPTIONS, result, ENV);
    expect(plan.interfaces.map((i) => [i.name, i.addresses])).toEqual([
      ['eth0', []],
      ['net1', ['10.89.0.5']],
    ]);
  });

  it('narrows to the `interfaces` option, keeping result indexes', () => {
    const result: PlanResult = {
      interfaces: [
        { name: 'eth0', sandbox: NETNS },
        { name: 'net1', sandbox: NETNS },
      ],
      ips: [
        { address: '10.88.0.5', family: 4, interface: 0 },
        { address: '10.89.0.5', family: 4, interface: 1 },
      ],
    };
    const plan = planAnnouncement(options({ interfaces: ['net1'] }), result, ENV);
    expect(plan.interfaces.map((i) => [i.name, i.resultIndex, i.addresses])).toEqual([['net1', 1, ['10.89.0.5']]]);
    expect(planAnnouncement(options({ interfaces: ['net9'] }), result, ENV).interfaces).toEqual([]);
  });

  it('lists the interfaces without a sandbox as host peer names', () => {
    const plan = planAnnouncement(OPTIONS, BRIDGE_RESULT, ENV);
    expect(plan.hostPeerNames).toEqual(['cni-t0', 'veth6f1e2a40']);
  });
});

describe('planAnnouncement: families and addresses', () => {
  const dual: PlanResult = {
    interfaces: [{ name: 'eth0', sandbox: NETNS }],
    ips: [
      { address: 'fd00:88::5', family: 6, interface: 0 },
      { address: '10.88.0.5', family: 4, interface: 0 },
      { address: '10.88.0.6', family: 4, interface: 0 },
      { address: 'fd00:88::6', family: 6, interface: 0 },
    ],
  };

  it('splits addresses by family in prevResult order', () => {
    const [iface] = planAnnouncement(OPTIONS, dual, ENV).interfaces;
    expect(iface!.ipv4).toEqual(['10.88.0.5', '10.88.0.6']);
    expect(iface!.ipv6).toEqual(['fd00:88::5', 'fd00:88::6']);
  });

  it('drops IPv4 with ipv4: false but keeps every address in `addresses`', () => {
    const [iface] = planAnnouncement(options({ ipv4: false }), dual, ENV).interfaces;
    expect(iface!.ipv4).toEqual([]);
    expect(iface!.ipv6).toEqual(['fd00:88::5', 'fd00:88::6']);
    expect(iface!.addresses).toEqual(['fd00:88::5', '10.88.0.5', '10.88.0.6', 'fd00:88::6']);
  });

  it('drops IPv6 with ipv6: false but keeps every address in `addresses`', () => {
    const [iface] = planAnnouncement(options({ ipv6: false }), dual, ENV).interfaces;
    expect(iface!.ipv4).toEqual(['10.88.0.5', '10.88.0.6']);
    expect(iface!.ipv6).toEqual([]);
    expect(iface!.addresses).toEqual(['fd00:88::5', '10.88.0.5', '10.88.0.6', 'fd00:88::6']);
  });
});

describe('planAnnouncement: IP-derived MAC', () => {
  const single = (ips: PlanResult['ips']): PlanResult => ({ interfaces: [{ name: 'eth0', sandbox: NETNS }], ips });

  it('derives 0a:58 + the IPv4 bytes', () => {
    const [iface] = planAnnouncement(options({ mac: 'ip-derived' }), BRIDGE_RESULT, ENV).interfaces;
    expect(hex(iface!.targetMac)).toBe('0a580a580005');
  });

  it('derives from the first address in prevResult order, even when it is IPv6', () => {
    const result = single([
      { address: 'fd00::5', family: 6, interface: 0 },
      { address: '10.88.0.5', family: 4, interface: 0 },
    ]);
    const [iface] = planAnnouncement(options({ mac: 'ip-derived' }), result, ENV).interfaces;
    expect(hex(iface!.targetMac)).toBe('0a5867cc136b');
  });

  it('derives 0a:58 + sha256("fd00::5")[0..4] for an IPv6-only pod', () => {
    const [iface] = planAnnouncement(
      options({ mac: 'ip-derived' }),
      single([{ address: 'fd00::5', family: 6 }]),
      ENV,
    ).interfaces;
    expect(hex(iface!.targetMac)).toBe('0a5867cc136b');
  });

  it('derives from the first address even when its family is not announced', () => {
    const result = single([
      { address: '10.88.0.5', family: 4 },
      { address: 'fd00::5', family: 6 },
    ]);
    const [iface] = planAnnouncement(options({ mac: 'ip-derived', ipv4: false }), result, ENV).interfaces;
    expect(hex(iface!.targetMac)).toBe('0a580a580005');
  });

  it('uses a custom macPrefix', () => {
    const [iface] = planAnnouncement(options({ mac: 'ip-derived', macPrefix: '02:00' }), BRIDGE_RESULT, ENV).interfaces;
    expect(hex(iface!.targetMac)).toBe('02000a580005');
  });

  it('derives nothing with mac: keep', () => {
    const [iface] = planAnnouncement(OPTIONS, BRIDGE_RESULT, ENV).interfaces;
    expect(iface!.targetMac).toBeUndefined();
  });

  it('derives nothing for an interface without addresses', () => {
    const [iface] = planAnnouncement(options({ mac: 'ip-derived' }), single([]), ENV).interfaces;
    expect(iface!.targetMac).toBeUndefined();
  });
});

describe('planAnnouncement: gateways', () => {
  const NONE = { ipv4: [], ipv6: [] };
  /** A dual-stack pod as host-local fills it in: a gateway on each address. */
  const ips: PlanResult['ips'] = [
    { address: '10.88.0.5', family: 4, interface: 0, prefixLength: 24, gateway: '10.88.0.1' },
    { address: 'fd00:88::5', family: 6, interface: 0, prefixLength: 64, gateway: 'fd00:88::1' },
  ];
  const pod = (routes: PlanResult['routes'], ipsOf: PlanResult['ips'] = ips): PlanResult => ({
    interfaces: [{ name: 'eth0', sandbox: NETNS }],
    ips: ipsOf,
    routes,
  });
  const gatewaysOf = (result: PlanResult, over: Partial<PlanOptions> = {}) =>
    planAnnouncement(options(over), result, ENV).interfaces.map((i) => [i.name, i.gateways]);

  it("takes each route's gw that one of the interface's prefixes holds", () => {
    const result = pod([
      { dst: '0.0.0.0/0', gw: '10.88.0.1' },
      { dst: '::/0', gw: 'fd00:88::1' },
    ]);
    expect(gatewaysOf(result)).toEqual([['eth0', { ipv4: ['10.88.0.1'], ipv6: ['fd00:88::1'] }]]);
  });

  it('has none without routes, whatever gateways the addresses carry (host-local fills one in)', () => {
    expect(gatewaysOf(pod(undefined))).toEqual([['eth0', NONE]]);
    expect(gatewaysOf(pod([]))).toEqual([['eth0', NONE]]);
  });

  it('routes a route without gw through the gateway of its family, the first one given (ipam.ConfigureIface)', () => {
    const twoV4 = [{ ...ips[0]!, address: '10.88.0.6', gateway: '10.88.0.254' }, ...ips];
    expect(gatewaysOf(pod([{ dst: '10.96.0.0/12' }], twoV4))).toEqual([['eth0', { ipv4: ['10.88.0.254'], ipv6: [] }]]);
    expect(gatewaysOf(pod([{ dst: '::/0' }], twoV4))).toEqual([['eth0', { ipv4: [], ipv6: ['fd00:88::1'] }]]);
  });

  it('routes a route without gw nowhere when no address of its family has a gateway', () => {
    const v4Only = [ips[0]!, { ...ips[1]!, gateway: undefined }];
    expect(gatewaysOf(pod([{ dst: '::/0' }], v4Only))).toEqual([['eth0', NONE]]);
    expect(gatewaysOf(pod([{ dst: '0.0.0.0/0' }], [{ ...ips[0]!, gateway: '0.0.0.0' }]))).toEqual([['eth0', NONE]]);
  });

  it('ignores a gw outside every prefix of the interface, however the prefix splits a byte', () => {
    const slash20 = [{ address: '10.88.0.5', family: 4 as const, prefixLength: 20 }];
    const routes = [
      { dst: '10.1.0.0/16', gw: '10.88.15.254' }, // inside 10.88.0.0/20
      { dst: '10.2.0.0/16', gw: '10.88.16.1' }, // the next /20
      { dst: '10.3.0.0/16', gw: '10.89.0.1' },
      { dst: '10.4.0.0/16', gw: '192.168.0.1' },
    ];
    expect(gatewaysOf(pod(routes, slash20))).toEqual([['eth0', { ipv4: ['10.88.15.254'], ipv6: [] }]]);
  });

  it('puts no gw on the link of an address without a prefix length', () => {
    const bare = [{ address: '10.88.0.5', family: 4 as const }];
    expect(gatewaysOf(pod([{ dst: '0.0.0.0/0', gw: '10.88.0.1' }], bare))).toEqual([['eth0', NONE]]);
  });

  it('gives canonical text, each gateway once, in route order', () => {
    const routes = [
      { dst: '10.96.0.0/12', gw: '10.88.0.9' },
      { dst: '::/0', gw: 'FD00:88:0::1' },
      { dst: '0.0.0.0/0', gw: '10.88.0.1' },
      { dst: '10.97.0.0/16' }, // through 10.88.0.1 too
      { dst: 'fd00:99::/64', gw: 'fd00:88::1' },
      { dst: '10.98.0.0/16', gw: '10.88.0.9' },
    ];
    expect(gatewaysOf(pod(routes))).toEqual([['eth0', { ipv4: ['10.88.0.9', '10.88.0.1'], ipv6: ['fd00:88::1'] }]]);
  });

  it('gives each pod interface the gateways on its own prefixes', () => {
    const result: PlanResult = {
      interfaces: [
        { name: 'eth0', sandbox: NETNS },
        { name: 'net1', sandbox: NETNS },
      ],
      ips: [
        { address: '10.88.0.5', family: 4, interface: 0, prefixLength: 24, gateway: '10.88.0.1' },
        { address: '10.89.0.7', family: 4, interface: 1, prefixLength: 24, gateway: '10.89.0.1' },
        { address: 'fd00:89::7', family: 6, interface: 1, prefixLength: 64 },
      ],
      routes: [
        { dst: '0.0.0.0/0', gw: '10.88.0.1' },
        { dst: '10.200.0.0/16', gw: '10.89.0.254' },
        { dst: 'fd00:99::/64', gw: 'fd00:89::1' },
        { dst: '10.201.0.0/16' }, // through each interface's IPv4 gateway
      ],
    };
    expect(gatewaysOf(result)).toEqual([
      ['eth0', { ipv4: ['10.88.0.1'], ipv6: [] }],
      ['net1', { ipv4: ['10.89.0.254', '10.89.0.1'], ipv6: ['fd00:89::1'] }],
    ]);
    expect(gatewaysOf(result, { interfaces: ['net1'] })).toEqual([
      ['net1', { ipv4: ['10.89.0.254', '10.89.0.1'], ipv6: ['fd00:89::1'] }],
    ]);
  });

  it('gives a link-local IPv6 gw to the only pod interface, even one without IPv6 addresses', () => {
    const result = pod([{ dst: '::/0', gw: 'fe80::1' }], [ips[0]!]);
    expect(gatewaysOf(result)).toEqual([['eth0', { ipv4: [], ipv6: ['fe80::1'] }]]);
    const fallback: PlanResult = { ...result, interfaces: [] };
    expect(gatewaysOf(fallback)).toEqual([['eth0', { ipv4: [], ipv6: ['fe80::1'] }]]);
  });

  it('gives a link-local IPv6 gw to no interface of a pod with several, unless a prefix holds it', () => {
    const result: PlanResult = {
      interfaces: [
        { name: 'eth0', sandbox: NETNS },
        { name: 'net1', sandbox: NETNS },
      ],
      ips: [
        { address: 'fd00:88::5', family: 6, interface: 0, prefixLength: 64 },
        { address: 'fd00:89::7', family: 6, interface: 1, prefixLength: 64 },
      ],
      routes: [{ dst: '::/0', gw: 'fe80::1' }],
    };
    expect(gatewaysOf(result)).toEqual([
      ['eth0', NONE],
      ['net1', NONE],
    ]);
    expect(gatewaysOf(result, { interfaces: ['eth0'] })).toEqual([['eth0', NONE]]);
    const withLinkLocal = {
      ...result,
      ips: [...result.ips, { address: 'fe80::7', family: 6 as const, interface: 1, prefixLength: 64 }],
    };
    expect(gatewaysOf(withLinkLocal)).toEqual([
      ['eth0', NONE],
      ['net1', { ipv4: [], ipv6: ['fe80::1'] }],
    ]);
  });

  it('does not depend on the ipv4 and ipv6 options', () => {
    const result = pod([
      { dst: '0.0.0.0/0', gw: '10.88.0.1' },
      { dst: '::/0', gw: 'fd00:88::1' },
    ]);
    const both = [['eth0', { ipv4: ['10.88.0.1'], ipv6: ['fd00:88::1'] }]];
    expect(gatewaysOf(result, { ipv4: false })).toEqual(both);
    expect(gatewaysOf(result, { ipv6: false })).toEqual(both);
  });
});

describe('planAnnouncement: ARP ops and schedule', () => {
  it('sends one op, or request then reply for `both`', () => {
    expect(planAnnouncement(OPTIONS, BRIDGE_RESULT, ENV).arpOps).toEqual(['request']);
    expect(planAnnouncement(options({ arpOp: 'reply' }), BRIDGE_RESULT, ENV).arpOps).toEqual(['reply']);
    expect(planAnnouncement(options({ arpOp: 'both' }), BRIDGE_RESULT, ENV).arpOps).toEqual(['request', 'reply']);
  });

  it('carries the burst schedule of count, interval and backoff', () => {
    const plan = planAnnouncement(options({ count: 4, intervalMs: 400, backoff: 2 }), BRIDGE_RESULT, ENV);
    expect(plan.schedule).toEqual([0, 400, 1200, 2800]);
  });
});

describe('roundFrames', () => {
  const MAC = Buffer.from('02420a580005', 'hex');
  const V4_A = Buffer.from('0a580005', 'hex'); // 10.88.0.5
  const V4_B = Buffer.from('0a580006', 'hex'); // 10.88.0.6
  const V6_A = Buffer.from('fd000088000000000000000000000005', 'hex'); // fd00:88::5
  const V6_B = Buffer.from('fd000088000000000000000000000006', 'hex'); // fd00:88::6
  const ethertype = (f: Buffer): string => f.subarray(12, 14).toString('hex');
  const NA_FLAGS = 14 + 40 + 4; // Ethernet + IPv6 header + ICMPv6 type/code/checksum

  it('builds an ARP per IPv4 address per op, then an NA per IPv6 address', () => {
    const frames = roundFrames(
      { mac: MAC, noarp: false, ipv4: [V4_A, V4_B], ipv6: [{ bytes: V6_A, optimistic: false }] },
      ['request', 'reply'],
      false,
    );
    expect(frames.map(ethertype)).toEqual(['0806', '0806', '0806', '0806', '86dd']);
    expect(frames[0]).toEqual(gratuitousArp({ mac: MAC, ip: V4_A, op: 'request' }));
    expect(frames[1]).toEqual(gratuitousArp({ mac: MAC, ip: V4_A, op: 'reply' }));
    expect(frames[2]).toEqual(gratuitousArp({ mac: MAC, ip: V4_B, op: 'request' }));
    expect(frames[3]).toEqual(gratuitousArp({ mac: MAC, ip: V4_B, op: 'reply' }));
    expect(frames[4]).toEqual(unsolicitedNeighborAdvert({ mac: MAC, ip: V6_A, router: false, override: true }));
  });

  it('sends one ARP per address with a single op', () => {
    const frames = roundFrames({ mac: MAC, noarp: false, ipv4: [V4_A, V4_B], ipv6: [] }, ['reply'], false);
    expect(frames.map((f) => f.readUInt16BE(20))).toEqual([2, 2]); // ARP opcode
    expect(frames.map((f) => f.subarray(28, 32).toString('hex'))).toEqual(['0a580005', '0a580006']); // spa
  });

  it('sends no ARP on a NOARP link, only the NAs', () => {
    const frames = roundFrames(
      {
        mac: MAC,
        noarp: true,
        ipv4: [V4_A],
        ipv6: [
          { bytes: V6_A, optimistic: false },
          { bytes: V6_B, optimistic: false },
        ],
      },
      ['request', 'reply'],
      false,
    );
    expect(frames.map(ethertype)).toEqual(['86dd', '86dd']);
    // NA target
    expect(frames.map((f) => f.subarray(62, 78).toString('hex'))).toEqual([V6_A.toString('hex'), V6_B.toString('hex')]);
  });

  it('sets O=1 for a settled address and clears it for an optimistic one', () => {
    const frames = roundFrames(
      {
        mac: MAC,
        noarp: false,
        ipv4: [],
        ipv6: [
          { bytes: V6_A, optimistic: false },
          { bytes: V6_B, optimistic: true },
        ],
      },
      ['request'],
      false,
    );
    expect(frames.map((f) => f[NA_FLAGS])).toEqual([0x20, 0x00]);
  });

  it('sets R when the pod is a router', () => {
    const frames = roundFrames(
      {
        mac: MAC,
        noarp: false,
        ipv4: [],
        ipv6: [
          { bytes: V6_A, optimistic: false },
          { bytes: V6_B, optimistic: true },
        ],
      },
      ['request'],
      true,
    );
    expect(frames.map((f) => f[NA_FLAGS])).toEqual([0xa0, 0x80]);
  });

  it('builds nothing for a round without addresses', () => {
    expect(roundFrames({ mac: MAC, noarp: false, ipv4: [], ipv6: [] }, ['request', 'reply'], false)).toEqual([]);
  });
});
