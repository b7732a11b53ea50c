import { describe, expect, it } from 'vitest';
import type { CniArgs } from '../../../src/cni/cni-args';
import { parseConfig } from '../../../src/cni/config';
import { resolveOptions } from '../../../src/cni/options';

const BASE = { cniVersion: '1.1.0', name: 'podnet', type: 'announcer' };
const NO_ARGS: CniArgs = { raw: {} };
const args = (announce: boolean): CniArgs => ({ announce, raw: { ANNOUNCE: String(announce) } });

describe('resolveOptions', () => {
  it('takes the config, enabled by default', () => {
    const config = parseConfig({ ...BASE, ipv6: false, count: 4, interfaces: ['eth0'] });
    expect(resolveOptions(config, NO_ARGS)).toEqual({
      enabled: true,
      ipv4: true,
      ipv6: false,
      arpOp: 'request',
      interfaces: ['eth0'],
      mac: 'keep',
      macPrefix: '0a:58',
      count: 4,
      intervalMs: 1000,
      backoff: 1,
      addWaitMs: 2000,
      readyTimeoutMs: 60000,
    });
  });

  it('lets CNI_ARGS ANNOUNCE override the config', () => {
    const config = parseConfig(BASE);
    expect(resolveOptions(config, args(false)).enabled).toBe(false);
    expect(resolveOptions(config, args(true)).enabled).toBe(true);
  });

  it.each([
    [false, true, false],
    [true, false, true],
    [{ count: 5 }, false, false],
    [{ count: 5, enabled: true }, false, true],
    [{ enabled: false, mac: 'keep' }, true, false],
  ])('args.cni.announce %j with ANNOUNCE=%s gives enabled: %s (an object only changes what it names)', (announce, cniArg, enabled) => {
    const config = parseConfig({ ...BASE, args: { cni: { announce } } });
    expect(resolveOptions(config, args(cniArg)).enabled).toBe(enabled);
  });

  it('applies only the overridden fields', () => {
    const config = parseConfig({
      ...BASE,
      mac: 'ip-derived',
      count: 2,
      intervalMs: 500,
      args: { cni: { announce: { count: 6, arpOp: 'both', mac: 'keep', backoff: 2 } } },
    });
    expect(resolveOptions(config, NO_ARGS)).toMatchObject({
      enabled: true,
      count: 6,
      arpOp: 'both',
      mac: 'keep',
      backoff: 2,
      intervalMs: 500,
      ipv4: true,
    });
  });

  it('keeps the MAC rule when an attachment opts out', () => {
    const config = parseConfig({ ...BASE, mac: 'ip-derived', args: { cni: { announce: false } } });
    expect(resolveOptions(config, NO_ARGS)).toMatchObject({ enabled: false, mac: 'ip-derived' });
  });

  it('does not share the interfaces array with the config', () => {
    const config = parseConfig({ ...BASE, interfaces: ['eth0'] });
    resolveOptions(config, NO_ARGS).interfaces?.push('net1');
    expect(config.interfaces).toEqual(['eth0']);
  });
});
