import { cniError } from '../../support/cni-errors';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Config from '../../../src/cni/config';
import type * as Errors from '../../../src/cni/errors';
import { OPTIONS } from '../../../src/cni/option-schema';

const BASE = { cniVersion: '1.0.0', name: 'podnet', type: 'announcer' };

// Each test loads the parser afresh, and with it the option table and its schemas: code that runs when a module
// loads is then the test's own (a mutation run activates a mutant only inside a test).
let parseConfig: typeof Config.parseConfig;
let CniError: typeof Errors.CniError;
beforeEach(async () => {
  vi.resetModules();
  ({ parseConfig } = await import('../../../src/cni/config'));
  ({ CniError } = await import('../../../src/cni/errors'));
});

/** The CniError parseConfig throws on `raw`: code 7. */
const configError = (raw: Record<string, unknown>): Errors.CniError => cniError(() => parseConfig(raw), 7, CniError);

describe('parseConfig', () => {
  it('applies every default', () => {
    const config = parseConfig(BASE);
    expect(config).toEqual({
      ...BASE,
      ipv4: true,
      ipv6: true,
      arpOp: 'request',
      mac: 'keep',
      macPrefix: '0a:58',
      count: 3,
      intervalMs: 1000,
      backoff: 1,
      addWaitMs: 2000,
      readyTimeoutMs: 60000,
      conflictCheck: 'off',
      onUnavailable: 'fail',
      probeMs: 100,
      probes: 2,
      gatewayCheck: 'report',
      gatewayCheckMs: 1000,
      stateDir: '/run/cni-announcer',
      logLevel: 'info',
      podOverrides: ['enabled=false', 'mac=keep'],
    });
    expect(config).not.toHaveProperty('idleExitMs'); // a node setting: not the conflist's
    const defaults = Object.entries(OPTIONS).filter(([, o]) => o.fallback !== undefined && o.scope !== 'node');
    expect(config).toMatchObject(Object.fromEntries(defaults.map(([k, o]) => [k, o.fallback])));
  });

  it('reads every option', () => {
    const raw = {
      ...BASE,
      ipv4: false,
      ipv6: false,
      arpOp: 'both',
      interfaces: ['eth0', 'net1'],
      mac: 'ip-derived',
      macPrefix: '02:AB',
      count: 0,
      intervalMs: 10,
      backoff: 2.5,
      addWaitMs: 0,
      readyTimeoutMs: 600000,
      conflictCheck: 'fail',
      onUnavailable: 'fail',
      probeMs: 2000,
      probes: 3,
      gatewayCheck: 'off',
      gatewayCheckMs: 10000,
      stateDir: '/var/lib/announcer',
      logFile: '/var/log/announcer.log',
      logLevel: 'debug',
      podOverrides: ['enabled=false', 'count', 'macPrefix'],
    };
    expect(parseConfig(raw)).toEqual(raw);
    const node = {
      rateLimit: { framesPerSecond: 100, burst: 200 },
      idleExitMs: 100,
      metricsFile: '/var/lib/node-exporter/announcer.prom',
    };
    expect(parseConfig({ ...raw, ...node })).toEqual({ ...raw, nodeOptions: node });
  });

  it('tolerates and keeps unknown fields', () => {
    const raw = { ...BASE, bridge: 'cni0', 'x-custom': { a: 1 }, runtimeConfig: { portMappings: [] } };
    expect(parseConfig(raw).runtimeConfig).toEqual({ portMappings: [] });
  });

  it('passes prevResult through unvalidated', () => {
    expect(parseConfig({ ...BASE, prevResult: 'anything' }).prevResult).toBe('anything');
    expect('prevResult' in parseConfig(BASE)).toBe(false);
  });

  it('reads runtimeConfig.mac', () => {
    expect(parseConfig({ ...BASE, runtimeConfig: { mac: '02:00:00:00:00:01' } }).runtimeConfig).toEqual({
      mac: '02:00:00:00:00:01',
    });
  });

  it.each([
    [{ count: 11 }, '"count" must be an integer from 0 to 10 (got 11)'],
    [{ count: -1 }, '"count" must be an integer from 0 to 10 (got -1)'],
    [{ count: 1.5 }, '"count" must be an integer from 0 to 10 (got 1.5)'],
    // Unsafe and out of range: two checks fail, the field is named once.
    [{ count: 2 ** 60 }, '"count" must be an integer from 0 to 10 (got 1152921504606847000)'],
    [{ count: '3' }, '"count" must be an integer from 0 to 10 (got "3")'],
    [{ intervalMs: 9 }, '"intervalMs" must be an integer from 10 to 60000 (got 9)'],
    [{ backoff: 4.5 }, '"backoff" must be a number from 1 to 4 (got 4.5)'],
    [{ addWaitMs: 30001 }, '"addWaitMs" must be an integer from 0 to 30000 (got 30001)'],
    [{ readyTimeoutMs: 600001 }, '"readyTimeoutMs" must be an integer from 0 to 600000 (got 600001)'],
    [{ conflictCheck: 'on' }, '"conflictCheck" must be one of "off", "warn", "fail" (got "on")'],
    [{ probeMs: 9 }, '"probeMs" must be an integer from 10 to 2000 (got 9)'],
    [{ probeMs: 2001 }, '"probeMs" must be an integer from 10 to 2000 (got 2001)'],
    [{ probes: 0 }, '"probes" must be an integer from 1 to 3 (got 0)'],
    [{ probes: 4 }, '"probes" must be an integer from 1 to 3 (got 4)'],
    [{ gatewayCheck: 'on' }, '"gatewayCheck" must be one of "off", "report", "require" (got "on")'],
    [{ gatewayCheck: true }, '"gatewayCheck" must be one of "off", "report", "require" (got true)'],
    [{ gatewayCheckMs: 49 }, '"gatewayCheckMs" must be an integer from 50 to 10000 (got 49)'],
    [{ gatewayCheckMs: 10001 }, '"gatewayCheckMs" must be an integer from 50 to 10000 (got 10001)'],
    [{ gatewayCheckMs: 100.5 }, '"gatewayCheckMs" must be an integer from 50 to 10000 (got 100.5)'],
    [{ ipv4: 'yes' }, '"ipv4" must be true or false (got "yes")'],
    [{ ipv6: 1 }, '"ipv6" must be true or false (got 1)'],
    [{ arpOp: 'gratuitous' }, '"arpOp" must be one of "request", "reply", "both" (got "gratuitous")'],
    [{ mac: 'random' }, '"mac" must be one of "keep", "ip-derived" (got "random")'],
    [{ macPrefix: '0a58' }, '"macPrefix" must be two hex bytes such as "0a:58" (got "0a58")'],
    [{ macPrefix: '0a:58:00' }, '"macPrefix" must be two hex bytes such as "0a:58" (got "0a:58:00")'],
    [{ macPrefix: '01:00' }, '"macPrefix" must not have the multicast bit (0x01 of the first byte) set (got "01:00")'],
    [{ macPrefix: '0b:58:00' }, '"macPrefix" must be two hex bytes such as "0a:58" (got "0b:58:00")'],
    [{ macPrefix: '0b:58' }, '"macPrefix" must not have the multicast bit (0x01 of the first byte) set (got "0b:58")'],
    [{ stateDir: 'run/x' }, '"stateDir" must be an absolute path (got "run/x")'],
    [{ logFile: 3 }, '"logFile" must be an absolute path (got 3)'],
    [{ logLevel: 'trace' }, '"logLevel" must be one of "error", "warn", "info", "debug" (got "trace")'],
    [{ interfaces: 'eth0' }, '"interfaces" must be an array (got "eth0")'],
    [{ interfaces: ['eth0', ''] }, '"interfaces[1]" must not be empty (got "")'],
    [{ interfaces: ['eth0', 'a/b'] }, '"interfaces[1]" must not contain "/", ":" or whitespace (got "a/b")'],
    [{ interfaces: [7] }, '"interfaces[0]" must be a string (got 7)'],
    [{ runtimeConfig: [] }, '"runtimeConfig" must be an object (got [])'],
    [{ runtimeConfig: { mac: 5 } }, '"runtimeConfig.mac" must be a string (got 5)'],
    [{ args: 'x' }, '"args" must be an object (got "x")'],
    [{ name: 42 }, '"name" must be a string (got 42)'],
  ])('rejects %j', (fields, problem) => {
    expect(configError({ ...BASE, ...fields }).message).toBe(`invalid config: ${problem}`);
  });

  it('requires cniVersion, name and type', () => {
    expect(configError({ bridge: 'x' }).message).toBe(
      'invalid config: "cniVersion" is required; "name" is required; "type" is required',
    );
  });

  it('names every bad field at once', () => {
    expect(configError({ ...BASE, count: 11, arpOp: 'x' }).message).toBe(
      'invalid config: "arpOp" must be one of "request", "reply", "both" (got "x"); "count" must be an ' +
        'integer from 0 to 10 (got 11)',
    );
  });
});

describe('args.cni.announce under podOverrides', () => {
  const withAnnounce = (announce: unknown, fields: Record<string, unknown> = {}) => ({
    ...BASE,
    ...fields,
    args: { cni: { announce, other: 1 }, foo: 'bar' },
  });
  /** `from` of a podAnnounce whose overrides all came from args.cni.announce. */
  const fromArgs = (overrides: object) =>
    Object.fromEntries(Object.keys(overrides).map((k) => [k, 'args.cni.announce']));

  it.each([true, false])('keeps args as received and turns %s into an enabled override', (announce) => {
    const config = parseConfig(withAnnounce(announce));
    expect(config.args).toEqual({ cni: { announce, other: 1 }, foo: 'bar' });
    expect(config.podAnnounce).toEqual({
      overrides: { enabled: announce },
      ignored: [],
      from: { enabled: 'args.cni.announce' },
    });
  });

  it('has no podAnnounce without args.cni.announce', () => {
    expect(parseConfig({ ...BASE, args: { cni: { other: 1 } } })).not.toHaveProperty('podAnnounce');
  });

  it('applies every field when podOverrides lists them all, and drops unknown keys silently', () => {
    const overrides = {
      enabled: false,
      ipv4: false,
      ipv6: true,
      arpOp: 'reply',
      mac: 'ip-derived',
      macPrefix: '06:00',
      count: 5,
      intervalMs: 400,
      backoff: 2,
      gatewayCheck: 'require',
      gatewayCheckMs: 5000,
      future: 'x',
    };
    const { future: _dropped, enabled: _off, ...known } = overrides;
    const podOverrides = ['enabled=false', ...Object.keys(known)];
    expect(parseConfig(withAnnounce(overrides, { podOverrides })).podAnnounce).toEqual({
      overrides: { enabled: false, ...known },
      ignored: [],
      from: fromArgs({ enabled: false, ...known }),
    });
  });

  it('by default allows only enabled: false and mac: keep; the rest is ignored with its reason', () => {
    const config = parseConfig(
      withAnnounce({
        enabled: false,
        mac: 'keep',
        count: 10,
        macPrefix: '02:00',
        gatewayCheck: 'off',
        stateDir: '/x',
      }),
    );
    const reason = 'not allowed: podOverrides allows enabled=false, mac=keep';
    expect(config.podAnnounce).toEqual({
      overrides: { enabled: false, mac: 'keep' },
      ignored: [
        { field: 'args.cni.announce.count', value: 10, reason },
        { field: 'args.cni.announce.macPrefix', value: '02:00', reason },
        { field: 'args.cni.announce.gatewayCheck', value: 'off', reason },
        { field: 'args.cni.announce.stateDir', value: '/x', reason: 'only the conflist sets it' },
      ],
      from: { enabled: 'args.cni.announce', mac: 'args.cni.announce' },
    });
  });

  it('with podOverrides [] ignores even enabled: false, but always accepts enabled: true', () => {
    expect(parseConfig(withAnnounce(false, { podOverrides: [] })).podAnnounce).toEqual({
      overrides: {},
      ignored: [
        { field: 'args.cni.announce.enabled', value: false, reason: 'not allowed: podOverrides allows nothing' },
      ],
      from: {},
    });
    expect(parseConfig(withAnnounce(true, { podOverrides: [] })).podAnnounce).toEqual({
      overrides: { enabled: true },
      ignored: [],
      from: { enabled: 'args.cni.announce' },
    });
  });

  it('never errors on a field the pod may not change, whatever its value', () => {
    expect(() => parseConfig(withAnnounce({ count: 'lots', macPrefix: '03:00', logFile: 7 }))).not.toThrow();
  });

  it.each([
    [{ count: 11 }, ['count'], '"args.cni.announce.count" must be an integer from 0 to 10 (got 11)'],
    [{ arpOp: 'x' }, ['arpOp'], '"args.cni.announce.arpOp" must be one of "request", "reply", "both" (got "x")'],
    [
      { macPrefix: '03:00' },
      ['macPrefix'],
      '"args.cni.announce.macPrefix" must not have the multicast bit (0x01 of the first byte) set (got "03:00")',
    ],
    [
      { gatewayCheck: 'on' },
      ['gatewayCheck'],
      '"args.cni.announce.gatewayCheck" must be one of "off", "report", "require" (got "on")',
    ],
    [
      { gatewayCheckMs: 10001 },
      ['gatewayCheckMs'],
      '"args.cni.announce.gatewayCheckMs" must be an integer from 50 to 10000 (got 10001)',
    ],
    [{ enabled: 'no' }, ['enabled=false'], '"args.cni.announce.enabled" must be true or false (got "no")'],
    [{ mac: 'random' }, ['mac=keep'], '"args.cni.announce.mac" must be one of "keep", "ip-derived" (got "random")'],
    ['yes', [], '"args.cni.announce" must be true, false or an object of option overrides (got "yes")'],
    [[], [], '"args.cni.announce" must be true, false or an object of option overrides (got [])'],
    [null, [], '"args.cni.announce" must be true, false or an object of option overrides (got null)'],
  ])('rejects %j when podOverrides is %j', (announce, podOverrides, problem) => {
    expect(configError(withAnnounce(announce, { podOverrides })).message).toBe(`invalid config: ${problem}`);
  });

  it.each([
    [
      ['everything'],
      '"podOverrides[0]" must be one of "enabled=false", "mac=keep", "ipv4", "ipv6", "arpOp", "mac", ' +
        '"macPrefix", "count", "intervalMs", "backoff", "probeMs", "probes", "gatewayCheck", "gatewayCheckMs" ' +
        '(got "everything")',
    ],
    [
      ['enabled'],
      '"podOverrides[0]" must be one of "enabled=false", "mac=keep", "ipv4", "ipv6", "arpOp", "mac", ' +
        '"macPrefix", "count", "intervalMs", "backoff", "probeMs", "probes", "gatewayCheck", "gatewayCheckMs" ' +
        '(got "enabled")',
    ],
    ['count', '"podOverrides" must be an array (got "count")'],
  ])('rejects podOverrides %j', (podOverrides, problem) => {
    expect(configError({ ...BASE, podOverrides }).message).toBe(`invalid config: ${problem}`);
  });

  it('reports config and override problems together', () => {
    expect(configError({ ...withAnnounce({ count: 99 }, { podOverrides: ['count'] }), count: 99 }).message).toBe(
      'invalid config: "count" must be an integer from 0 to 10 (got 99); "args.cni.announce.count" must ' +
        'be an integer from 0 to 10 (got 99)',
    );
  });

  it("reads an invalid podOverrides as allowing nothing, and still reports the pod's problems", () => {
    expect(configError(withAnnounce('yes', { podOverrides: 'count' })).message).toBe(
      'invalid config: "podOverrides" must be an array (got "count"); "args.cni.announce" must be true, ' +
        'false or an object of option overrides (got "yes")',
    );
    expect(configError(withAnnounce({ count: 99 }, { podOverrides: ['count', 'everything'] })).message).toMatch(
      /^invalid config: "podOverrides\[1\]" must be one of [^;]*$/,
    );
  });
});

describe('the burst cap: the last round at most 10 minutes after the first', () => {
  it.each([
    [{ count: 10, intervalMs: 60000, backoff: 1 }],
    [{ count: 3, intervalMs: 60000, backoff: 4 }],
    [{ count: 10, intervalMs: 1000, backoff: 1.9 }],
    [{ count: 5, intervalMs: 40000, backoff: 2 }], // 10 min exactly
  ])('accepts %j', (fields) => {
    expect(() => parseConfig({ ...BASE, ...fields })).not.toThrow();
  });

  it('refuses a conflist burst that lasts longer, naming the three fields', () => {
    expect(configError({ ...BASE, count: 10, intervalMs: 60000, backoff: 4 }).message).toBe(
      'invalid config: "count" 10, "intervalMs" 60000 and "backoff" 4 put the last round 60.7 days after the first ' +
        '(the sum of intervalMs × backoff^k for k < count - 1); a burst may last at most 10 min',
    );
    expect(configError({ ...BASE, count: 10, intervalMs: 60000, backoff: 1.2 }).message).toMatch(
      /put the last round 20\.8 min after/,
    );
  });

  it("refuses a conflist burst that lasts longer even where a pod's override would shorten it", () => {
    const raw = { ...BASE, count: 10, intervalMs: 60000, backoff: 4, podOverrides: ['backoff'] };
    expect(configError({ ...raw, args: { cni: { announce: { backoff: 1 } } } }).message).toMatch(
      /^invalid config: "count" 10, "intervalMs" 60000 and "backoff" 4 put the last round 60\.7 days after/,
    );
  });

  it('refuses a pod override that makes the burst too long, naming where each value came from', () => {
    const raw = {
      ...BASE,
      count: 10,
      intervalMs: 60000,
      podOverrides: ['backoff'],
      args: { cni: { announce: { backoff: 2 } } },
    };
    expect(configError(raw).message).toBe(
      'invalid config: "count" 10, "intervalMs" 60000 and "args.cni.announce.backoff" 2 put the last ' +
        'round 8.5 h after the first ' +
        '(the sum of intervalMs × backoff^k for k < count - 1); a burst may last at most 10 min',
    );
  });

  it('never errors on a pod annotation asking for a 60-day burst under the default policy: it is ignored', () => {
    const config = parseConfig({ ...BASE, args: { cni: { announce: { count: 10, intervalMs: 60000, backoff: 4 } } } });
    expect(config.podAnnounce?.overrides).toEqual({});
    expect(config.podAnnounce?.ignored).toHaveLength(3);
  });
});

describe('GC attachments', () => {
  const a = { containerID: 'c1', ifname: 'eth0', extra: true };
  const b = { containerID: 'c2', ifname: 'net1' };

  it('normalises cni.dev/valid-attachments', () => {
    expect(parseConfig({ ...BASE, 'cni.dev/valid-attachments': [a, b] }).validAttachments).toEqual([
      { containerId: 'c1', ifname: 'eth0' },
      { containerId: 'c2', ifname: 'net1' },
    ]);
  });

  it('takes the union of both keys, without duplicates', () => {
    const config = parseConfig({ ...BASE, 'cni.dev/valid-attachments': [a], 'cni.dev/attachments': [a, b] });
    expect(config.validAttachments).toEqual([
      { containerId: 'c1', ifname: 'eth0' },
      { containerId: 'c2', ifname: 'net1' },
    ]);
  });

  it('keeps an empty list apart from no list', () => {
    expect(parseConfig({ ...BASE, 'cni.dev/attachments': [] }).validAttachments).toEqual([]);
    expect(parseConfig(BASE).validAttachments).toBeUndefined();
  });

  it('names a bad entry', () => {
    expect(configError({ ...BASE, 'cni.dev/valid-attachments': [a, { containerID: 3, ifname: 'x' }] }).message).toBe(
      'invalid config: "cni.dev/valid-attachments[1].containerID" must be a string (got 3)',
    );
    expect(configError({ ...BASE, 'cni.dev/attachments': [{ containerID: 'x' }] }).message).toBe(
      'invalid config: "cni.dev/attachments[0].ifname" is required',
    );
  });
});

describe('onUnavailable', () => {
  const defaultsToFailTitle =
    'defaults to fail; takes skip where the result does not depend on the announcer, else code 7 naming the field';
  it(defaultsToFailTitle, () => {
    expect(parseConfig(BASE).onUnavailable).toBe('fail');
    expect(parseConfig({ ...BASE, onUnavailable: 'skip' }).onUnavailable).toBe('skip');
    for (const [extra, field] of [
      [{ mac: 'ip-derived' }, '"mac" is "ip-derived"'],
      [{ conflictCheck: 'fail' }, '"conflictCheck" is "fail"'],
      [{ podOverrides: ['mac'] }, '"podOverrides" lets a pod ask for "mac"'],
    ] as [object, string][]) {
      const err = configError({ ...BASE, onUnavailable: 'skip', ...extra });
      expect([err.code, err.message]).toEqual([7, expect.stringContaining(field)]);
      expect(err.message).toContain('"onUnavailable": "skip"');
    }
    expect(configError({ ...BASE, onUnavailable: 'maybe' }).message).toContain('onUnavailable');
  });

  const refusal = (why: string) =>
    `invalid config: "onUnavailable": "skip" needs a result that does not depend on the announcer, but ${why}`;
  it.each([
    [{ gatewayCheck: 'require' }, '"gatewayCheck" is "require"'],
    [{ podOverrides: ['gatewayCheck'] }, '"podOverrides" lets a pod ask for "gatewayCheck"'],
    [
      { gatewayCheck: 'off', podOverrides: ['enabled=false', 'gatewayCheck'] },
      '"podOverrides" lets a pod ask for "gatewayCheck"',
    ],
  ])('refuses skip with %j, code 7 naming the field', (extra, why) => {
    const err = configError({ ...BASE, onUnavailable: 'skip', ...extra });
    expect([err.code, err.message]).toEqual([7, refusal(why)]);
  });

  it('takes skip with gatewayCheck off or report, and a podOverrides allowing only gatewayCheckMs', () => {
    for (const extra of [{ gatewayCheck: 'off' }, { gatewayCheck: 'report', podOverrides: ['gatewayCheckMs'] }])
      expect(parseConfig({ ...BASE, onUnavailable: 'skip', ...extra }).onUnavailable).toBe('skip');
  });
});
