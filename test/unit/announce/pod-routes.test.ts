// The gateways a pod routes through, from its own routing table too (withPodRoutes, first-round.ts).
import { describe, expect, it } from 'vitest';
import { withPodRoutes, type AddGatewayCheck } from '../../../src/announce/first-round';
import type { RouteEntry } from '../../../src/wire/rtnetlink';

const ETH0 = { name: 'eth0', iface: { index: 2 }, ipv4: ['10.88.0.5'], ipv6: ['fd00:88::5'] };
const NET1 = { name: 'net1', iface: { index: 3 }, ipv4: ['10.99.0.5'], ipv6: [] };
const check = (gateways: AddGatewayCheck['gateways'] = [], mode: AddGatewayCheck['mode'] = 'report') => ({
  mode,
  windowMs: 1000,
  gateways,
});
const via = (oif: number, gateway: string): RouteEntry =>
  gateway.includes(':')
    ? { family: 10, dstLen: 0, table: 254, oif, gateway: Buffer.from(gateway.replace(/:/g, '').padEnd(32, '0'), 'hex') }
    : { family: 2, dstLen: 0, table: 254, oif, gateway: Buffer.from(gateway.split('.').map(Number)) };
/** A pod's routing table holding `routes`: routes() gives those of the family asked for. */
const table = (routes: RouteEntry[]) => ({
  routes: (family: number) => routes.filter((r) => r.family === family),
});

describe('withPodRoutes', () => {
  it("adds each next hop of the pod's table on a planned interface, once, in canonical text", () => {
    const routes = [via(2, '10.88.0.1'), via(2, '10.88.0.1'), via(3, '10.99.0.254')];
    expect(withPodRoutes(check(), table(routes), [ETH0, NET1]).gateways).toEqual([
      { interface: 'eth0', gateway: '10.88.0.1' },
      { interface: 'net1', gateway: '10.99.0.254' },
    ]);
  });

  it('adds another next hop of an interface that already has one', () => {
    const planned = [{ interface: 'eth0', gateway: '10.88.0.1' }];
    expect(withPodRoutes(check(planned), table([via(2, '10.88.0.254')]), [ETH0]).gateways).toEqual([
      ...planned,
      { interface: 'eth0', gateway: '10.88.0.254' },
    ]);
  });

  it('adds a gateway already known on another interface for this one too', () => {
    const planned = [{ interface: 'net1', gateway: '10.88.0.1' }];
    const net1 = { ...NET1, ipv4: ['10.88.0.6'] };
    expect(withPodRoutes(check(planned), table([via(2, '10.88.0.1')]), [ETH0, net1]).gateways).toEqual([
      ...planned,
      { interface: 'eth0', gateway: '10.88.0.1' },
    ]);
  });

  it('keeps what prevResult routed, and does not add it twice in another spelling', () => {
    const planned = [{ interface: 'eth0', gateway: 'fd00:88:0:0:0:0:0:1' }];
    const v6: RouteEntry = { ...via(2, 'fd00:0088'), gateway: Buffer.from('fd000088000000000000000000000001', 'hex') };
    expect(withPodRoutes(check(planned), table([v6]), [ETH0]).gateways).toEqual(planned);
  });

  it('leaves out direct routes, other links, and families the interface does not announce', () => {
    const direct: RouteEntry = { family: 2, dstLen: 24, table: 254, oif: 2 };
    const v6onNet1 = { ...via(3, 'fd00:0099'), gateway: Buffer.from('fd000099000000000000000000000001', 'hex') };
    expect(withPodRoutes(check(), table([direct, via(9, '10.1.1.1'), v6onNet1]), [ETH0, NET1]).gateways).toEqual([]);
  });

  it('reads nothing into a check that is off, nor the table', () => {
    const off = check([], 'off');
    const unread = {
      routes: (): RouteEntry[] => {
        throw new Error('the table was read');
      },
    };
    expect(withPodRoutes(off, unread, [ETH0])).toBe(off);
  });
});
