import { beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Config from '../../../src/cni/config';
import type { CniArgs } from '../../../src/cni/env';
import type * as Options from '../../../src/cni/options';

// Each test loads the modules afresh, and with them the option table: code that runs when a module loads is then the
// test's own (a mutation run activates a mutant only inside a test).
let parseConfig: typeof Config.parseConfig;
let { resolveOptions, runtimeMac } = {} as typeof Options;
beforeEach(async () => {
  vi.resetModules();
  ({ parseConfig } = await import('../../../src/cni/config'));
  ({ resolveOptions, runtimeMac } = await import('../../../src/cni/options'));
});

const BASE = { cniVersion: '1.1.0', name: 'podnet', type: 'announcer' };
const NO_ARGS: CniArgs = { raw: {} };
const args = (announce: boolean): CniArgs => ({ announce, raw: { ANNOUNCE: String(announce) } });
const withPod = (announce: unknown, fields: Record<string, unknown> = {}) =>
  parseConfig({ ...BASE, ...fields, args: { cni: { announce } } });

describe('resolveOptions', () => {
  it('takes the config, enabled by default, with nothing to note', () => {
    const config = parseConfig({ ...BASE, ipv6: false, count: 4, interfaces: ['eth0'] });
    // Every option of the attachment, as the config has it; the network's own fields stay behind.
    const { cniVersion, name, type, stateDir, logLevel, podOverrides, ...options } = config;
    expect(options).toMatchObject({ ipv6: false, count: 4, interfaces: ['eth0'], gatewayCheck: 'report' });
    expect(resolveOptions(config, NO_ARGS)).toEqual({ options: { enabled: true, ...options }, notes: [] });
    expect(resolveOptions(parseConfig(BASE), NO_ARGS).options).not.toHaveProperty('interfaces');
  });

  it('lets CNI_ARGS ANNOUNCE=false turn announcing off, and notes who did', () => {
    const { options, notes } = resolveOptions(parseConfig(BASE), args(false));
    expect(options.enabled).toBe(false);
    expect(notes).toEqual([
      { level: 'info', msg: 'announcing turned off for this attachment', fields: { by: 'CNI_ARGS ANNOUNCE=false' } },
    ]);
    expect(resolveOptions(parseConfig(BASE), args(true)).options.enabled).toBe(true);
    expect(resolveOptions(withPod(false), args(false)).notes).toEqual([
      {
        level: 'info',
        msg: 'announcing turned off for this attachment',
        fields: { by: 'CNI_ARGS ANNOUNCE=false, args.cni.announce' },
      },
    ]);
  });

  it.each([
    [false, undefined, false],
    [{ enabled: false }, undefined, false],
    [false, true, false],
    [true, false, false],
    [{ enabled: true }, false, false],
    [{ count: 1 }, false, false],
    [true, undefined, true],
    [{ enabled: true }, true, true],
  ])('off wins: args.cni.announce %j with ANNOUNCE=%s gives enabled: %s', (announce, cniArg, enabled) => {
    const config = withPod(announce);
    expect(resolveOptions(config, cniArg === undefined ? NO_ARGS : args(cniArg)).options.enabled).toBe(enabled);
  });

  it('warns that a request to announce does not turn announcing back on', () => {
    const { notes } = resolveOptions(withPod(true), args(false));
    expect(notes).toContainEqual({
      level: 'warn',
      msg: 'a request to announce does not turn announcing back on',
      fields: { by: 'args.cni.announce' },
    });
  });

  it('lets nothing re-enable what the conflist turned off (count 0, ipv4 and ipv6 false)', () => {
    const config = parseConfig({
      ...BASE,
      count: 0,
      ipv4: false,
      ipv6: false,
      podOverrides: ['enabled=false'],
      args: { cni: { announce: { enabled: true } } },
    });
    const { options } = resolveOptions(config, args(true));
    expect(options).toMatchObject({ enabled: true, count: 0, ipv4: false, ipv6: false });
  });

  it('by default ignores every field but enabled: false and mac: keep, with a warning each', () => {
    const config = withPod(
      { count: 10, intervalMs: 60000, backoff: 4, ipv4: true, macPrefix: '02:00', mac: 'ip-derived' },
      { ipv4: false },
    );
    const { options, notes } = resolveOptions(config, NO_ARGS);
    expect(options).toMatchObject({
      count: 3,
      intervalMs: 1000,
      backoff: 1,
      ipv4: false,
      macPrefix: '0a:58',
      mac: 'keep',
      enabled: true,
    });
    expect(notes.filter((n) => n.level === 'warn').map((n) => n.fields.field)).toEqual([
      'args.cni.announce.count',
      'args.cni.announce.intervalMs',
      'args.cni.announce.backoff',
      'args.cni.announce.ipv4',
      'args.cni.announce.macPrefix',
      'args.cni.announce.mac',
    ]);
  });

  it('applies what podOverrides allows, and says so', () => {
    const ARGS = 'args.cni.announce';
    const config = parseConfig({
      ...BASE,
      mac: 'ip-derived',
      count: 2,
      intervalMs: 500,
      podOverrides: ['count', 'arpOp', 'mac=keep', 'backoff'],
      args: { cni: { announce: { count: 6, arpOp: 'both', mac: 'keep', backoff: 2 } } },
    });
    const { options, notes } = resolveOptions(config, NO_ARGS);
    expect(options).toMatchObject({
      enabled: true,
      count: 6,
      arpOp: 'both',
      mac: 'keep',
      backoff: 2,
      intervalMs: 500,
      ipv4: true,
    });
    expect(notes).toEqual([
      {
        level: 'info',
        msg: 'pod overrides applied',
        fields: {
          overrides: { count: 6, arpOp: 'both', mac: 'keep', backoff: 2 },
          from: { count: ARGS, arpOp: ARGS, mac: ARGS, backoff: ARGS },
        },
      },
    ]);
  });

  it('lets a pod tune the conflict probe only where podOverrides allows it, and never turn the check off', () => {
    const pod = { conflictCheck: 'off', probeMs: 500, probes: 1 };
    const byDefault = resolveOptions(withPod(pod, { conflictCheck: 'fail' }), NO_ARGS);
    expect(byDefault.options).toMatchObject({ conflictCheck: 'fail', probeMs: 100, probes: 2 });
    expect(byDefault.notes.filter((n) => n.level === 'warn').map((n) => [n.fields.field, n.fields.reason])).toEqual([
      ['args.cni.announce.conflictCheck', 'only the conflist sets it'],
      ['args.cni.announce.probeMs', 'not allowed: podOverrides allows enabled=false, mac=keep'],
      ['args.cni.announce.probes', 'not allowed: podOverrides allows enabled=false, mac=keep'],
    ]);
    const allowed = resolveOptions(
      withPod(pod, { conflictCheck: 'fail', podOverrides: ['probeMs', 'probes'] }),
      NO_ARGS,
    );
    expect(allowed.options).toMatchObject({ conflictCheck: 'fail', probeMs: 500, probes: 1 });
  });

  it("carries the conflist's gatewayCheck and gatewayCheckMs, and the pod's where podOverrides allows them", () => {
    const conflist = { gatewayCheck: 'require', gatewayCheckMs: 300 };
    const pod = { gatewayCheck: 'off', gatewayCheckMs: 5000 };
    expect(resolveOptions(withPod(pod, conflist), NO_ARGS).options).toMatchObject(conflist);
    const allowed = resolveOptions(
      withPod(pod, { ...conflist, podOverrides: ['gatewayCheck', 'gatewayCheckMs'] }),
      NO_ARGS,
    );
    expect(allowed.options).toMatchObject(pod);
  });

  it('keeps the MAC rule when an attachment opts out', () => {
    const config = parseConfig({ ...BASE, mac: 'ip-derived', args: { cni: { announce: false } } });
    expect(resolveOptions(config, NO_ARGS).options).toMatchObject({ enabled: false, mac: 'ip-derived' });
  });

  it('does not share the interfaces array with the config', () => {
    const config = parseConfig({ ...BASE, interfaces: ['eth0'] });
    resolveOptions(config, NO_ARGS).options.interfaces?.push('net1');
    expect(config.interfaces).toEqual(['eth0']);
  });
});

describe('a MAC the runtime chose', () => {
  it.each([
    ['runtimeConfig.mac', { runtimeConfig: { mac: '02:00:00:00:00:01' } }, NO_ARGS, '02:00:00:00:00:01'],
    ['args.cni.mac', { args: { cni: { mac: '02:00:00:00:00:02' } } }, NO_ARGS, '02:00:00:00:00:02'],
    ['CNI_ARGS MAC', {}, { mac: '02:00:00:00:00:03', raw: { MAC: '02:00:00:00:00:03' } }, '02:00:00:00:00:03'],
  ] as const)('from %s turns ip-derived into keep, with an info note', (source, fields, cniArgs, mac) => {
    const config = parseConfig({ ...BASE, mac: 'ip-derived', ...fields });
    const { options, notes } = resolveOptions(config, cniArgs);
    expect(options.mac).toBe('keep');
    expect(notes).toContainEqual({
      level: 'info',
      msg: 'the runtime chose the MAC: keeping it instead of the IP-derived one',
      fields: { mac, source },
    });
  });

  it('is noted at debug level alone where mac is keep', () => {
    const config = parseConfig({ ...BASE, args: { cni: { mac: '02:00:00:00:00:02' } } });
    expect(resolveOptions(config, NO_ARGS)).toMatchObject({
      options: { mac: 'keep' },
      notes: [
        {
          level: 'debug',
          msg: 'the runtime chose the MAC',
          fields: { mac: '02:00:00:00:00:02', source: 'args.cni.mac' },
        },
      ],
    });
  });

  it('overrides an ip-derived choice the pod was allowed to make', () => {
    const config = parseConfig({
      ...BASE,
      podOverrides: ['mac'],
      args: { cni: { announce: { mac: 'ip-derived' }, mac: '02:00:00:00:00:02' } },
    });
    expect(resolveOptions(config, NO_ARGS).options.mac).toBe('keep');
  });

  it('names the first source present, in the tuning plugin order', () => {
    const config = parseConfig({ ...BASE, runtimeConfig: { mac: 'a' }, args: { cni: { mac: 'b' } } });
    expect(runtimeMac(config, { mac: 'c', raw: { MAC: 'c' } })).toEqual({ mac: 'a', source: 'runtimeConfig.mac' });
    expect(runtimeMac(parseConfig({ ...BASE, args: { cni: { mac: 'b' } } }), { mac: 'c', raw: {} })).toEqual({
      mac: 'b',
      source: 'args.cni.mac',
    });
  });

  it('ignores an empty or non-string args.cni.mac, with a warning for the latter', () => {
    expect(runtimeMac(parseConfig({ ...BASE, args: { cni: { mac: '' } } }), NO_ARGS)).toBeUndefined();
    expect(runtimeMac(parseConfig({ ...BASE, args: {} }), NO_ARGS)).toBeUndefined();
    const { options, notes } = resolveOptions(
      parseConfig({ ...BASE, mac: 'ip-derived', args: { cni: { mac: 5 } } }),
      NO_ARGS,
    );
    expect(options.mac).toBe('ip-derived');
    expect(notes).toEqual([{ level: 'warn', msg: 'ignoring args.cni.mac: not a string', fields: { value: 5 } }]);
  });
});
