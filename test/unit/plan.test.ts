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

type Ip = PlanResult['ips'][number];
/** An address of prevResult, of the family its text says, on interface `iface` (undefined: none given). */
const ip = (address: string, iface?: number, more: Partial<Ip> = {}): Ip => ({
  address,
  family: address.includes(':') ? 6 : 4,
  interface: iface,
  ...more,
});
/** A pod with `names` in its netns, in that order, and `ips` and `routes`. */
const pod = (names: string[], ips: Ip[], routes?: PlanResult['routes']): PlanResult => ({
  interfaces: names.map((name) => ({ name, sandbox: NETNS })),
  ips,
  routes,
});
/** Each planned interface's name, result index and addresses. */
const placed = (plan: { interfaces: { name: string; resultIndex?: number; addresses: string[] }[] }) =>
  plan.interfaces.map((i) => [i.name, i.resultIndex, i.addresses]);

describe('burstSchedule', () => {
  it.each([
    ['is empty for count 0', 0, 400, 1, []],
    ['is a single round at 0 for count 1', 1, 400, 2, [0]],
    ['spaces rounds evenly with backoff 1', 3, 1000, 1, [0, 1000, 2000]],
    ['spaces rounds evenly with backoff 1', 4, 400, 1, [0, 400, 800, 1200]],
    ['doubles each gap with backoff 2', 3, 1000, 2, [0, 1000, 3000]],
    ['doubles each gap with backoff 2', 4, 400, 2, [0, 400, 1200, 2800]],
    // gaps 333, 499.5 → offsets 0, 333, 832.5
    ['rounds fractional offsets to whole ms', 3, 333, 1.5, [0, 333, 833]],
  ])('%s: count %i, intervalMs %i, backoff %d', (_what, count, intervalMs, backoff, schedule) => {
    expect(burstSchedule(count, intervalMs, backoff)).toEqual(schedule);
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
    expect(plan.interfaces.map((i) => [i.name, i.resultIndex, i.ipv4, i.ipv6])).toEqual([
      ['eth0', 2, ['10.88.0.5'], ['fd00:88::5']],
    ]);
  });

  it('ignores interfaces sandboxed in another netns', () => {
    const result: PlanResult = {
      interfaces: [
        { name: 'eth0', sandbox: '/var/run/netns/other' },
        { name: 'net1', sandbox: NETNS },
      ],
      ips: [ip('10.88.0.7', 0), ip('10.89.0.5', 1)],
    };
    expect(placed(planAnnouncement(OPTIONS, result, ENV))).toEqual([['net1', 1, ['10.89.0.5']]]);
  });

  it('falls back to CNI_IFNAME when no interface has a sandbox', () => {
    const plan = planAnnouncement(OPTIONS, { interfaces: [], ips: [ip('10.88.0.5')] }, ENV);
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
    const result = { interfaces: [{ name: 'veth1' }, { name: 'eth0' }], ips: [ip('10.88.0.5', 1), ip('10.88.0.6', 0)] };
    expect(placed(planAnnouncement(OPTIONS, result, ENV))).toEqual([['eth0', 1, ['10.88.0.5']]]);
    const first = { interfaces: [{ name: 'eth0' }, { name: 'veth1' }], ips: [ip('10.88.0.5', 0)] };
    expect(placed(planAnnouncement(OPTIONS, first, ENV))).toEqual([['eth0', 0, ['10.88.0.5']]]);
  });

  it('assigns addresses by their interface index, keeping prevResult order', () => {
    const ips = [ip('10.89.0.5', 1), ip('10.88.0.5', 0), ip('fd00:89::5', 1), ip('10.89.0.6', 1)];
    const plan = planAnnouncement(OPTIONS, pod(['eth0', 'net1'], ips), ENV);
    expect(plan.interfaces.map((i) => [i.name, i.resultIndex, i.addresses, i.ipv4, i.ipv6])).toEqual([
      ['eth0', 0, ['10.88.0.5'], ['10.88.0.5'], []],
      ['net1', 1, ['10.89.0.5', 'fd00:89::5', '10.89.0.6'], ['10.89.0.5', '10.89.0.6'], ['fd00:89::5']],
    ]);
  });

  it('gives addresses without an interface index to the single pod interface', () => {
    const result: PlanResult = {
      interfaces: [{ name: 'cni-t0' }, { name: 'eth0', sandbox: NETNS }],
      ips: [ip('10.88.0.5'), ip('fd00:88::5')],
    };
    expect(placed(planAnnouncement(OPTIONS, result, ENV))).toEqual([['eth0', 1, ['10.88.0.5', 'fd00:88::5']]]);
  });

  it('gives addresses without an interface index to nobody when there are several pod interfaces', () => {
    const plan = planAnnouncement(OPTIONS, pod(['eth0', 'net1'], [ip('10.88.0.5'), ip('10.89.0.5', 1)]), ENV);
    expect(placed(plan)).toEqual([
      ['eth0', 0, []],
      ['net1', 1, ['10.89.0.5']],
    ]);
  });

  it('narrows to the `interfaces` option, keeping result indexes', () => {
    const result = pod(['eth0', 'net1'], [ip('10.88.0.5', 0), ip('10.89.0.5', 1)]);
    expect(placed(planAnnouncement(options({ interfaces: ['net1'] }), result, ENV))).toEqual([
      ['net1', 1, ['10.89.0.5']],
    ]);
    expect(planAnnouncement(options({ interfaces: ['net9'] }), result, ENV).interfaces).toEqual([]);
  });

  it('lists the interfaces without a sandbox as host peer names', () => {
    const plan = planAnnouncement(OPTIONS, BRIDGE_RESULT, ENV);
    expect(plan.hostPeerNames).toEqual(['cni-t0', 'veth6f1e2a40']);
  });
});

describe('planAnnouncement: families and addresses', () => {
  const dual = pod(['eth0'], [ip('fd00:88::5', 0), ip('10.88.0.5', 0), ip('10.88.0.6', 0), ip('fd00:88::6', 0)]);
  const V4 = ['10.88.0.5', '10.88.0.6'];
  const V6 = ['fd00:88::5', 'fd00:88::6'];

  it.each([
    ['splits addresses by family in prevResult order', {}, V4, V6],
    ['drops IPv4 with ipv4: false but keeps every address in `addresses`', { ipv4: false }, [], V6],
    ['drops IPv6 with ipv6: false but keeps every address in `addresses`', { ipv6: false }, V4, []],
  ])('%s', (_what, over, ipv4, ipv6) => {
    const [iface] = planAnnouncement(options(over), dual, ENV).interfaces;
    expect(iface).toMatchObject({ ipv4, ipv6, addresses: ['fd00:88::5', '10.88.0.5', '10.88.0.6', 'fd00:88::6'] });
  });
});

describe('planAnnouncement: IP-derived MAC', () => {
  it.each([
    ['derives 0a:58 + the IPv4 bytes', {}, BRIDGE_RESULT, '0a580a580005'],
    [
      'derives from the first address in prevResult order, even when it is IPv6',
      {},
      pod(['eth0'], [ip('fd00::5', 0), ip('10.88.0.5', 0)]),
      '0a5867cc136b',
    ],
    [
      'derives 0a:58 + sha256("fd00::5")[0..4] for an IPv6-only pod',
      {},
      pod(['eth0'], [ip('fd00::5')]),
      '0a5867cc136b',
    ],
    [
      'derives from the first address even when its family is not announced',
      { ipv4: false },
      pod(['eth0'], [ip('10.88.0.5'), ip('fd00::5')]),
      '0a580a580005',
    ],
    ['uses a custom macPrefix', { macPrefix: '02:00' }, BRIDGE_RESULT, '02000a580005'],
    ['derives nothing with mac: keep', { mac: 'keep' as const }, BRIDGE_RESULT, undefined],
    ['derives nothing for an interface without addresses', {}, pod(['eth0'], []), undefined],
  ])('%s', (_what, over, result, mac) => {
    const [iface] = planAnnouncement(options({ mac: 'ip-derived', ...over }), result, ENV).interfaces;
    expect(hex(iface!.targetMac)).toBe(mac);
  });
});

describe('planAnnouncement: gateways', () => {
  const NONE = { ipv4: [], ipv6: [] };
  /** A dual-stack pod as host-local fills it in: a gateway on each address. */
  const ips = [
    ip('10.88.0.5', 0, { prefixLength: 24, gateway: '10.88.0.1' }),
    ip('fd00:88::5', 0, { prefixLength: 64, gateway: 'fd00:88::1' }),
  ];
  /** Default routes through the gateways of `ips`. */
  const DEFAULTS = [
    { dst: '0.0.0.0/0', gw: '10.88.0.1' },
    { dst: '::/0', gw: 'fd00:88::1' },
  ];
  const eth0 = (routes: PlanResult['routes'], ipsOf: Ip[] = ips): PlanResult => pod(['eth0'], ipsOf, routes);
  const gatewaysOf = (result: PlanResult, over: Partial<PlanOptions> = {}) =>
    planAnnouncement(options(over), result, ENV).interfaces.map((i) => [i.name, i.gateways]);

  it("takes each route's gw that one of the interface's prefixes holds", () => {
    expect(gatewaysOf(eth0(DEFAULTS))).toEqual([['eth0', { ipv4: ['10.88.0.1'], ipv6: ['fd00:88::1'] }]]);
  });

  it('has none without routes, whatever gateways the addresses carry (host-local fills one in)', () => {
    expect(gatewaysOf(eth0(undefined))).toEqual([['eth0', NONE]]);
    expect(gatewaysOf(eth0([]))).toEqual([['eth0', NONE]]);
  });

  it('routes a route without gw through the gateway of its family, the first one given (ipam.ConfigureIface)', () => {
    const twoV4 = [{ ...ips[0]!, address: '10.88.0.6', gateway: '10.88.0.254' }, ...ips];
    expect(gatewaysOf(eth0([{ dst: '10.96.0.0/12' }], twoV4))).toEqual([['eth0', { ipv4: ['10.88.0.254'], ipv6: [] }]]);
    expect(gatewaysOf(eth0([{ dst: '::/0' }], twoV4))).toEqual([['eth0', { ipv4: [], ipv6: ['fd00:88::1'] }]]);
  });

  it('routes a route without gw nowhere when no address of its family has a gateway', () => {
    const v4Only = [ips[0]!, { ...ips[1]!, gateway: undefined }];
    expect(gatewaysOf(eth0([{ dst: '::/0' }], v4Only))).toEqual([['eth0', NONE]]);
    expect(gatewaysOf(eth0([{ dst: '0.0.0.0/0' }], [{ ...ips[0]!, gateway: '0.0.0.0' }]))).toEqual([['eth0', NONE]]);
  });

  it('ignores a gw outside every prefix of the interface, however the prefix splits a byte', () => {
    const slash20 = [ip('10.88.0.5', undefined, { prefixLength: 20 })];
    const routes = [
      { dst: '10.1.0.0/16', gw: '10.88.15.254' }, // inside 10.88.0.0/20
      { dst: '10.2.0.0/16', gw: '10.88.16.1' }, // the next /20
      { dst: '10.3.0.0/16', gw: '10.89.0.1' },
      { dst: '10.4.0.0/16', gw: '192.168.0.1' },
    ];
    expect(gatewaysOf(eth0(routes, slash20))).toEqual([['eth0', { ipv4: ['10.88.15.254'], ipv6: [] }]]);
  });

  it('puts no gw on the link of an address without a prefix length', () => {
    const bare = [ip('10.88.0.5')];
    expect(gatewaysOf(eth0([{ dst: '0.0.0.0/0', gw: '10.88.0.1' }], bare))).toEqual([['eth0', NONE]]);
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
    expect(gatewaysOf(eth0(routes))).toEqual([['eth0', { ipv4: ['10.88.0.9', '10.88.0.1'], ipv6: ['fd00:88::1'] }]]);
  });

  it('gives each pod interface the gateways on its own prefixes', () => {
    const result = pod(
      ['eth0', 'net1'],
      [
        ip('10.88.0.5', 0, { prefixLength: 24, gateway: '10.88.0.1' }),
        ip('10.89.0.7', 1, { prefixLength: 24, gateway: '10.89.0.1' }),
        ip('fd00:89::7', 1, { prefixLength: 64 }),
      ],
      [
        { dst: '0.0.0.0/0', gw: '10.88.0.1' },
        { dst: '10.200.0.0/16', gw: '10.89.0.254' },
        { dst: 'fd00:99::/64', gw: 'fd00:89::1' },
        { dst: '10.201.0.0/16' }, // through each interface's IPv4 gateway
      ],
    );
    expect(gatewaysOf(result)).toEqual([
      ['eth0', { ipv4: ['10.88.0.1'], ipv6: [] }],
      ['net1', { ipv4: ['10.89.0.254', '10.89.0.1'], ipv6: ['fd00:89::1'] }],
    ]);
    expect(gatewaysOf(result, { interfaces: ['net1'] })).toEqual([
      ['net1', { ipv4: ['10.89.0.254', '10.89.0.1'], ipv6: ['fd00:89::1'] }],
    ]);
  });

  it('gives a link-local IPv6 gw to the only pod interface, even one without IPv6 addresses', () => {
    const result = eth0([{ dst: '::/0', gw: 'fe80::1' }], [ips[0]!]);
    expect(gatewaysOf(result)).toEqual([['eth0', { ipv4: [], ipv6: ['fe80::1'] }]]);
    const fallback: PlanResult = { ...result, interfaces: [] };
    expect(gatewaysOf(fallback)).toEqual([['eth0', { ipv4: [], ipv6: ['fe80::1'] }]]);
  });

  it('gives a link-local IPv6 gw to no interface of a pod with several, unless a prefix holds it', () => {
    const result = pod(
      ['eth0', 'net1'],
      [ip('fd00:88::5', 0, { prefixLength: 64 }), ip('fd00:89::7', 1, { prefixLength: 64 })],
      [{ dst: '::/0', gw: 'fe80::1' }],
    );
    expect(gatewaysOf(result)).toEqual([
      ['eth0', NONE],
      ['net1', NONE],
    ]);
    expect(gatewaysOf(result, { interfaces: ['eth0'] })).toEqual([['eth0', NONE]]);
    const withLinkLocal = { ...result, ips: [...result.ips, ip('fe80::7', 1, { prefixLength: 64 })] };
    expect(gatewaysOf(withLinkLocal)).toEqual([
      ['eth0', NONE],
      ['net1', { ipv4: [], ipv6: ['fe80::1'] }],
    ]);
  });

  it('does not depend on the ipv4 and ipv6 options', () => {
    const both = [['eth0', { ipv4: ['10.88.0.1'], ipv6: ['fd00:88::1'] }]];
    expect(gatewaysOf(eth0(DEFAULTS), { ipv4: false })).toEqual(both);
    expect(gatewaysOf(eth0(DEFAULTS), { ipv6: false })).toEqual(both);
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
  /** A round on a link with MAC: its IPv4 addresses, and IPv6 ones, each settled or optimistic. */
  const round = (ipv4: Buffer[], ipv6: [Buffer, boolean][], noarp = false) => ({
    mac: MAC,
    noarp,
    ipv4,
    ipv6: ipv6.map(([bytes, optimistic]) => ({ bytes, optimistic })),
  });

  it('builds an ARP per IPv4 address per op, then an NA per IPv6 address', () => {
    const frames = roundFrames(round([V4_A, V4_B], [[V6_A, false]]), ['request', 'reply'], false);
    expect(frames.map(ethertype)).toEqual(['0806', '0806', '0806', '0806', '86dd']);
    expect(frames).toEqual([
      gratuitousArp({ mac: MAC, ip: V4_A, op: 'request' }),
      gratuitousArp({ mac: MAC, ip: V4_A, op: 'reply' }),
      gratuitousArp({ mac: MAC, ip: V4_B, op: 'request' }),
      gratuitousArp({ mac: MAC, ip: V4_B, op: 'reply' }),
      unsolicitedNeighborAdvert({ mac: MAC, ip: V6_A, router: false, override: true }),
    ]);
  });

  it('sends one ARP per address with a single op', () => {
    const frames = roundFrames(round([V4_A, V4_B], []), ['reply'], false);
    expect(frames.map((f) => f.readUInt16BE(20))).toEqual([2, 2]); // ARP opcode
    expect(frames.map((f) => f.subarray(28, 32).toString('hex'))).toEqual(['0a580005', '0a580006']); // spa
  });

  it('sends no ARP on a NOARP link, only the NAs', () => {
    const frames = roundFrames(
      round(
        [V4_A],
        [
          [V6_A, false],
          [V6_B, false],
        ],
        true,
      ),
      ['request', 'reply'],
      false,
    );
    expect(frames.map(ethertype)).toEqual(['86dd', '86dd']);
    // NA target
    expect(frames.map((f) => f.subarray(62, 78).toString('hex'))).toEqual([V6_A.toString('hex'), V6_B.toString('hex')]);
  });

  // O=1 for a settled address, clear for an optimistic one; R when the pod is a router.
  it.each([
    [false, [0x20, 0x00]],
    [true, [0xa0, 0x80]],
  ])('sets O for a settled address, not an optimistic one, and R when the pod is a router (%s)', (router, flags) => {
    const frames = roundFrames(
      round(
        [],
        [
          [V6_A, false],
          [V6_B, true],
        ],
      ),
      ['request'],
      router,
    );
    expect(frames.map((f) => f[NA_FLAGS])).toEqual(flags);
  });

  it('builds nothing for a round without addresses', () => {
    expect(roundFrames(round([], []), ['request', 'reply'], false)).toEqual([]);
  });
});
