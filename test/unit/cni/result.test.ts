import { describe, expect, it } from 'vitest';
import { formatResult, parsePrevResult } from '../../../src/cni/result';
import { cniError } from '../../support/cni-errors';

/** A bridge-plugin 1.0.0 result for a dual-stack pod, with fields we do not know. */
const BRIDGE_RESULT = {
  cniVersion: '1.0.0',
  interfaces: [
    { name: 'cni-t0', mac: '52:54:00:aa:bb:cc' },
    { name: 'veth1234', mac: '6e:11:22:33:44:55' },
    { name: 'eth0', mac: '86:03:17:7a:eb:6e', sandbox: '/var/run/netns/pod', mtu: 1500 },
  ],
  ips: [
    { address: '10.88.0.5/24', gateway: '10.88.0.1', interface: 2 },
    { address: 'fd00:88::5/64', gateway: 'fd00:88::1', interface: 2 },
  ],
  routes: [{ dst: '0.0.0.0/0', gw: '10.88.0.1' }],
  dns: { nameservers: ['10.88.0.1'], search: ['cluster.local'] },
  'x-custom': { keep: ['me'] },
};

const resultError = (raw: unknown) => cniError(() => parsePrevResult(raw), 7);

describe('parsePrevResult', () => {
  it('gives a typed view and keeps the raw object', () => {
    const prev = parsePrevResult(BRIDGE_RESULT);
    expect(prev.raw).toBe(BRIDGE_RESULT);
    expect(prev.interfaces).toEqual([
      { index: 0, name: 'cni-t0', mac: '52:54:00:aa:bb:cc' },
      { index: 1, name: 'veth1234', mac: '6e:11:22:33:44:55' },
      { index: 2, name: 'eth0', mac: '86:03:17:7a:eb:6e', sandbox: '/var/run/netns/pod' },
    ]);
    expect(prev.ips).toEqual([
      { cidr: '10.88.0.5/24', address: '10.88.0.5', family: 4, prefixLength: 24, gateway: '10.88.0.1', interface: 2 },
      {
        cidr: 'fd00:88::5/64',
        address: 'fd00:88::5',
        family: 6,
        prefixLength: 64,
        gateway: 'fd00:88::1',
        interface: 2,
      },
    ]);
  });

  it('accepts a result without interfaces or ips', () => {
    expect(parsePrevResult({ cniVersion: '0.3.1' })).toEqual({
      raw: { cniVersion: '0.3.1' },
      interfaces: [],
      ips: [],
      routes: [],
    });
  });

  it('reads routes as written, with and without gw, leaving their other fields in raw', () => {
    const raw = {
      routes: [
        { dst: '0.0.0.0/0', gw: '10.88.0.1', mtu: 1400 },
        { dst: '10.96.0.0/12' },
        { dst: '::/0', gw: 'FD00:88::1', priority: 5 },
        { dst: 'fd00:99::/64', gw: 'fe80::1' },
      ],
    };
    const prev = parsePrevResult(raw);
    expect(prev.routes).toEqual([
      { dst: '0.0.0.0/0', gw: '10.88.0.1' },
      { dst: '10.96.0.0/12' },
      { dst: '::/0', gw: 'FD00:88::1' },
      { dst: 'fd00:99::/64', gw: 'fe80::1' },
    ]);
    expect('gw' in prev.routes[1]!).toBe(false);
    expect(prev.raw).toBe(raw);
  });

  it('accepts a matching ips[].version', () => {
    expect(parsePrevResult({ ips: [{ version: '4', address: '10.0.0.2/8' }] }).ips[0]?.family).toBe(4);
  });

  const cidr = (i: number, got: string) =>
    `"prevResult.ips[${i}].address" must be an IP address with a prefix length, such as "10.88.0.5/24" (got ${got})`;
  const index = (range: string, got: string) =>
    `"prevResult.ips[0].interface" must be an index into prevResult.interfaces (${range}) (got ${got})`;
  const onEth0 = (interfaceIndex: unknown) => ({
    interfaces: [{ name: 'eth0' }],
    ips: [{ address: '10.0.0.2/8', interface: interfaceIndex }],
  });
  it.each([
    [{ ips: [{ address: '10.88.0.5/24' }, { address: '10.88.0.6' }] }, cidr(1, '"10.88.0.6"')],
    [{ ips: [{ address: '10.88.0.5/33' }] }, cidr(0, '"10.88.0.5/33"')],
    [{ ips: [{}] }, '"prevResult.ips[0].address" is required'],
    [onEth0(1), index('from 0 to 0', '1')],
    [{ ips: [{ address: '10.0.0.2/8', interface: 0 }] }, index('there are no interfaces', '0')],
    [onEth0(-1), index('from 0 to 0', '-1')],
    [onEth0('0'), index('from 0 to 0', '"0"')],
    [
      { ips: [{ address: '10.0.0.2/8', version: '6' }] },
      '"prevResult.ips[0].version" must match the address, which is IPv4 (got "6")',
    ],
    [{ ips: [{ address: '10.0.0.2/8', version: 4 }] }, '"prevResult.ips[0].version" must be "4" or "6" (got 4)'],
    [{ ips: [{ address: '10.0.0.2/8', gateway: 1 }] }, '"prevResult.ips[0].gateway" must be a string (got 1)'],
    [{ ips: {} }, '"prevResult.ips" must be an array (got {})'],
    [{ ips: ['10.0.0.2/8'] }, '"prevResult.ips[0]" must be an object (got "10.0.0.2/8")'],
    [{ interfaces: [{ mac: 'x' }] }, '"prevResult.interfaces[0].name" is required'],
    [{ interfaces: [{ name: '' }] }, '"prevResult.interfaces[0].name" must be a non-empty string (got "")'],
    [{ ips: [{ address: 'bogus', version: '4' }] }, cidr(0, '"bogus"')],
    [{ interfaces: [{ name: 'eth0', sandbox: 1 }] }, '"prevResult.interfaces[0].sandbox" must be a string (got 1)'],
    [{ interfaces: [{ name: 'eth0', mac: null }] }, '"prevResult.interfaces[0].mac" must be a string (got null)'],
    [
      { routes: [{ dst: '0.0.0.0/0', gw: '10.88.0.1/24' }] },
      '"prevResult.routes[0].gw" must be an IP address (got "10.88.0.1/24")',
    ],
    [
      { routes: [{ dst: '0.0.0.0/0', gw: 'fe80::1%eth0' }] },
      '"prevResult.routes[0].gw" must be an IP address (got "fe80::1%eth0")',
    ],
    [{ routes: [{ dst: '::/0', gw: null }] }, '"prevResult.routes[0].gw" must be an IP address (got null)'],
    [
      { routes: [{ dst: '0.0.0.0/0' }, { dst: '10.96.0.0', gw: '10.88.0.1' }] },
      '"prevResult.routes[1].dst" must be a network with a prefix length, such as "0.0.0.0/0" (got "10.96.0.0")',
    ],
    [{ routes: [{ gw: '10.88.0.1' }] }, '"prevResult.routes[0].dst" is required'],
    [{ routes: { dst: '0.0.0.0/0' } }, '"prevResult.routes" must be an array (got {"dst":"0.0.0.0/0"})'],
    [{ routes: ['0.0.0.0/0'] }, '"prevResult.routes[0]" must be an object (got "0.0.0.0/0")'],
    ['x', '"prevResult" must be an object (got "x")'],
  ])('rejects %j', (raw, problem) => {
    expect(resultError(raw).message).toBe(`invalid config: ${problem}`);
  });

  it('names every bad field at once', () => {
    expect(resultError({ interfaces: [{}], ips: [{ address: 'x' }] }).message).toBe(
      'invalid config: "prevResult.interfaces[0].name" is required; ' +
        '"prevResult.ips[0].address" must be an IP address with a prefix length, such as "10.88.0.5/24" (got "x")',
    );
  });

  it('names both bad fields of one route, after the bad fields of ips', () => {
    expect(resultError({ ips: [{ address: 'x/1' }], routes: [{ dst: 1, gw: 'y' }] }).message).toBe(
      'invalid config: "prevResult.ips[0].address" must be an IP address with a prefix length, ' +
        'such as "10.88.0.5/24" (got "x/1"); ' +
        '"prevResult.routes[0].dst" must be a network with a prefix length, such as "0.0.0.0/0" (got 1); ' +
        '"prevResult.routes[0].gw" must be an IP address (got "y")',
    );
  });
});

describe('formatResult', () => {
  const LEGACY = ['0.3.0', '0.3.1', '0.4.0'] as const;
  const CURRENT = ['1.0.0', '1.1.0'] as const;

  it.each(LEGACY)('adds ips[].version for %s and keeps everything else', (v) => {
    const out = formatResult(parsePrevResult(BRIDGE_RESULT), v);
    expect(out).toEqual({
      ...BRIDGE_RESULT,
      cniVersion: v,
      ips: [
        { version: '4', address: '10.88.0.5/24', gateway: '10.88.0.1', interface: 2 },
        { version: '6', address: 'fd00:88::5/64', gateway: 'fd00:88::1', interface: 2 },
      ],
    });
  });

  it.each(CURRENT)('drops ips[].version for %s and keeps everything else', (v) => {
    const legacy = {
      ...BRIDGE_RESULT,
      cniVersion: '0.4.0',
      ips: BRIDGE_RESULT.ips.map((ip, i) => ({ ...ip, version: i === 0 ? '4' : '6' })),
    };
    expect(formatResult(parsePrevResult(legacy), v)).toEqual({ ...BRIDGE_RESULT, cniVersion: v });
  });

  it('puts cniVersion first when prevResult has none', () => {
    const out = formatResult(parsePrevResult({ ips: [] }), '1.1.0');
    expect(Object.keys(out)).toEqual(['cniVersion', 'ips']);
  });

  it('deep-copies: the output shares nothing with the input', () => {
    const prev = parsePrevResult(structuredClone(BRIDGE_RESULT));
    const out = formatResult(prev, '0.4.0', { macs: new Map([[2, '0a:58:0a:58:00:05']]) });
    (out.dns as { search: string[] }).search.push('x');
    expect(prev.raw).toEqual(BRIDGE_RESULT);
  });

  it('applies MAC changes to the named interfaces only', () => {
    const out = formatResult(parsePrevResult(BRIDGE_RESULT), '1.0.0', { macs: new Map([[2, '0a:58:0a:58:00:05']]) });
    expect(out.interfaces).toEqual([
      BRIDGE_RESULT.interfaces[0],
      BRIDGE_RESULT.interfaces[1],
      { ...BRIDGE_RESULT.interfaces[2], mac: '0a:58:0a:58:00:05' },
    ]);
  });

  it('refuses a MAC change for an interface that is not there', () => {
    expect(() =>
      formatResult(parsePrevResult(BRIDGE_RESULT), '1.0.0', { macs: new Map([[3, '02:00:00:00:00:01']]) }),
    ).toThrow(new RangeError('no prevResult.interfaces[3] to set the MAC of'));
  });

  it('leaves a result without ips alone', () => {
    expect(formatResult(parsePrevResult({ cniVersion: '1.0.0', dns: {} }), '0.3.1')).toEqual({
      cniVersion: '0.3.1',
      dns: {},
    });
  });
});
