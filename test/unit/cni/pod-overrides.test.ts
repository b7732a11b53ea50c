import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cniError } from '../../support/cni-errors';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Config from '../../../src/cni/config';
import type * as Errors from '../../../src/cni/errors';
import type * as Options from '../../../src/cni/options';

// Each test loads the parser afresh, and with it the channels' tables: code that runs when a module loads is then
// the test's own (a mutation run activates a mutant only inside a test).
let parseConfig: typeof Config.parseConfig;
let resolveOptions: typeof Options.resolveOptions;
let CniError: typeof Errors.CniError;
beforeEach(async () => {
  vi.resetModules();
  ({ parseConfig } = await import('../../../src/cni/config'));
  ({ resolveOptions } = await import('../../../src/cni/options'));
  ({ CniError } = await import('../../../src/cni/errors'));
});

const BASE = { cniVersion: '1.0.0', name: 'podnet', type: 'announcer' };
const CAP = 'io.kubernetes.cri.pod-annotations';
const ANN = 'runtimeConfig["io.kubernetes.cri.pod-annotations"]["cni-announcer/announce"]';
const DEFAULT_POLICY = 'not allowed: podOverrides allows enabled=false, mac=keep';
const EXPECTED = 'must be "false", "true" or the JSON text of an object of option overrides';

/** A config as containerd sends it to an entry that declares the capability: every pod annotation in runtimeConfig. */
const withAnnotation = (text: unknown, fields: Record<string, unknown> = {}) => ({
  ...BASE,
  capabilities: { [CAP]: true },
  ...fields,
  runtimeConfig: { [CAP]: { 'io.kubernetes.pod.namespace': 'default', 'cni-announcer/announce': text } },
});

/** The CniError parseConfig throws on `raw`. */
const configError = (raw: Record<string, unknown>): Errors.CniError =>
  cniError(() => parseConfig(raw), undefined, CniError);

describe("the annotation's text: JSON true, false or an object", () => {
  it.each([
    ['false', { enabled: false }],
    ['true', { enabled: true }],
    [' false\n', { enabled: false }],
    ['{"count":5}', { count: 5 }],
    ['{}', {}],
  ])('reads %j', (text, overrides) => {
    const config = parseConfig(withAnnotation(text, { podOverrides: ['enabled=false', 'count'] }));
    expect(config.podAnnounce?.overrides).toEqual(overrides);
  });

  it('refuses a nesting bomb before JSON.parse, naming the annotation', () => {
    const bomb = `{"stateDir":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expect(configError(withAnnotation(bomb)).message).toBe(
      `invalid config: ${ANN} nests JSON arrays and objects more than 64 levels deep`,
    );
    expect(() => parseConfig(withAnnotation(`{"stateDir":${'['.repeat(63)}${']'.repeat(63)}}`))).not.toThrow();
  });
});

describe('the annotation is read only with the capability declared', () => {
  const findsNothingTitle =
    'finds nothing without runtimeConfig, without the annotation map, without the annotation, or in null (what ' +
    'containerd 1.6 sends for a pod without annotations)';
  it(findsNothingTitle, () => {
    const declared = { ...BASE, capabilities: { [CAP]: true } };
    expect(parseConfig(declared).podAnnounce).toBeUndefined();
    for (const runtimeConfig of [{ mac: '0a:58:0a:58:00:05' }, { [CAP]: { other: 'x' } }, { [CAP]: null }])
      expect(parseConfig({ ...declared, runtimeConfig }).podAnnounce).toBeUndefined();
  });

  it.each([[undefined], [{}], [{ [CAP]: false }], [{ [CAP]: 'true' }], [{ mac: true }]])(
    'reports an annotation sent under capabilities %j as undeclared, unread',
    (capabilities) => {
      const doc = { ...withAnnotation('{bad'), capabilities };
      expect(parseConfig(doc).podAnnounce).toEqual({
        overrides: {},
        ignored: [
          {
            field: ANN,
            value: '{bad',
            reason: `the config does not declare the capability: "capabilities": {"${CAP}": true}`,
          },
        ],
        from: {},
      });
    },
  );

  it("finds nothing when an undeclared annotation map lacks the announcer's annotation, or is not a map", () => {
    expect(parseConfig({ ...BASE, runtimeConfig: { [CAP]: { other: 'x' } } }).podAnnounce).toBeUndefined();
    expect(parseConfig({ ...BASE, runtimeConfig: { [CAP]: 'x' } }).podAnnounce).toBeUndefined();
  });

  it.each([[['x']], ['x']])('names the annotation map when a declared one is not an object: %j', (map) => {
    const doc = { ...BASE, capabilities: { [CAP]: true }, runtimeConfig: { [CAP]: map } };
    expect(configError(doc).message).toBe(
      `invalid config: runtimeConfig["${CAP}"] must be an object of the pod's annotations (got ${JSON.stringify(map)})`,
    );
  });
});

describe('the annotation under podOverrides, as args.cni.announce', () => {
  it('turns announcing off with "false", naming the annotation as the one who did', () => {
    const config = parseConfig(withAnnotation('false'));
    expect(config.podAnnounce).toEqual({ overrides: { enabled: false }, ignored: [], from: { enabled: ANN } });
    const { options, notes } = resolveOptions(config, { raw: {} });
    expect(options.enabled).toBe(false);
    expect(notes).toEqual([{ level: 'info', msg: 'announcing turned off for this attachment', fields: { by: ANN } }]);
  });

  it.each([['{"enabled":false}'], ['{"enabled":false,"count":9}']])('turns announcing off with %s', (text) => {
    expect(resolveOptions(parseConfig(withAnnotation(text)), { raw: {} }).options.enabled).toBe(false);
  });

  it('applies a count podOverrides allows, and says where it came from', () => {
    const config = parseConfig(withAnnotation('{"count":2}', { count: 4, podOverrides: ['enabled=false', 'count'] }));
    const { options, notes } = resolveOptions(config, { raw: {} });
    expect(options).toMatchObject({ enabled: true, count: 2 });
    expect(notes).toEqual([
      { level: 'info', msg: 'pod overrides applied', fields: { overrides: { count: 2 }, from: { count: ANN } } },
    ]);
  });

  it('by default ignores a count, and the conflist-only options, each logged with its reason', () => {
    const config = parseConfig(withAnnotation('{"count":2,"mac":"keep","stateDir":"/x"}', { count: 4 }));
    const { options, notes } = resolveOptions(config, { raw: {} });
    expect(options).toMatchObject({ enabled: true, count: 4, mac: 'keep' });
    const ignoring = (fields: object) => ({ level: 'warn', msg: 'ignoring a pod override', fields });
    expect(notes.filter((n) => n.level === 'warn')).toEqual([
      ignoring({ field: `${ANN}.count`, value: 2, reason: DEFAULT_POLICY }),
      ignoring({ field: `${ANN}.stateDir`, value: '/x', reason: 'only the conflist sets it' }),
    ]);
  });

  it('with podOverrides [] ignores even "false"', () => {
    const config = parseConfig(withAnnotation('false', { podOverrides: [] }));
    expect(resolveOptions(config, { raw: {} }).options.enabled).toBe(true);
    expect(config.podAnnounce?.ignored).toEqual([
      { field: `${ANN}.enabled`, value: false, reason: 'not allowed: podOverrides allows nothing' },
    ]);
  });

  const trueOnlyMeansTitle =
    '"true" only means "not turned off": CNI_ARGS ANNOUNCE=false still wins, with a warning naming the annotation';
  it(trueOnlyMeansTitle, () => {
    const { options, notes } = resolveOptions(parseConfig(withAnnotation('true')), {
      announce: false,
      raw: { ANNOUNCE: 'false' },
    });
    expect(options.enabled).toBe(false);
    expect(notes).toContainEqual({
      level: 'warn',
      msg: 'a request to announce does not turn announcing back on',
      fields: { by: ANN },
    });
  });

  it('keeps runtimeConfig as received', () => {
    expect(parseConfig(withAnnotation('false')).runtimeConfig).toEqual(withAnnotation('false').runtimeConfig);
  });
});

describe('a bad annotation is code 7, naming it', () => {
  const notJson = (text: string) => [text, `${ANN} is not JSON: it ${EXPECTED} (got ${JSON.stringify(text)})`];
  const wrongKind = (text: string) => [text, `${ANN} ${EXPECTED} (got ${JSON.stringify(text)})`];
  it.each([
    ...['no', '', '{count: 5}', 'False'].map(notJson),
    ...['[]', 'null', '5', '"false"'].map(wrongKind),
    ['{"count":11}', `${ANN}: "count" must be an integer from 0 to 10 (got 11)`],
    ['{"enabled":"no"}', `${ANN}: "enabled" must be true or false (got "no")`],
    ['{"arpOp":"x"}', `${ANN}: "arpOp" must be one of "request", "reply", "both" (got "x")`],
    ['{"gatewayCheck":"on"}', `${ANN}: "gatewayCheck" must be one of "off", "report", "require" (got "on")`],
    [
      '{"cout":2}',
      `${ANN}: "cout" is not an option a pod may set (enabled, ipv4, ipv6, arpOp, mac, macPrefix, count, ` +
        `intervalMs, backoff, probeMs, probes, gatewayCheck, gatewayCheckMs) (got 2)`,
    ],
  ])('names the annotation for %j', (text, problem) => {
    const e = configError(withAnnotation(text));
    expect(e.code).toBe(7);
    expect(e.message).toBe(`invalid config: ${problem}`);
  });

  it('is strict where args.cni.announce is lenient: an invalid value podOverrides leaves out, an unknown key', () => {
    const fields = { count: 'lots', future: 1 };
    expect(() => parseConfig({ ...BASE, args: { cni: { announce: fields } } })).not.toThrow();
    expect(configError(withAnnotation(JSON.stringify(fields))).message).toBe(
      `invalid config: ${ANN}: "count" must be an integer from 0 to 10 (got "lots"); ` +
        `${ANN}: "future" is not an option a pod may set (enabled, ipv4, ipv6, arpOp, mac, macPrefix, ` +
        `count, intervalMs, backoff, probeMs, probes, gatewayCheck, gatewayCheckMs) (got 1)`,
    );
  });

  it("names a runtime's non-string value", () => {
    expect(configError(withAnnotation(false)).message).toBe(`invalid config: ${ANN} must be a string (got false)`);
  });

  it("is reported with the conflist's problems", () => {
    expect(configError(withAnnotation('nope', { count: 99 })).message).toBe(
      `invalid config: "count" must be an integer from 0 to 10 (got 99); ${ANN} is not JSON: ` +
        `it ${EXPECTED} (got "nope")`,
    );
  });

  it('names the annotation when its burst lasts too long', () => {
    const raw = withAnnotation('{"backoff":2}', { count: 10, intervalMs: 60000, podOverrides: ['backoff'] });
    expect(configError(raw).message).toMatch(
      new RegExp(
        `^invalid config: "count" 10, "intervalMs" 60000 and ${escapeRegex(ANN)}\\.backoff 2 put the ` +
          `last round 8\\.5 h after`,
      ),
    );
  });
});

describe('args.cni.announce and the annotation together', () => {
  const both = (announce: unknown, text: string, podOverrides: string[] = ['enabled=false', 'count', 'arpOp']) =>
    parseConfig({ ...withAnnotation(text, { podOverrides }), args: { cni: { announce } } });

  it.each([
    [false, '{"count":2}'],
    [{ count: 2 }, 'false'],
    [false, 'false'],
    [true, 'false'],
    [false, 'true'],
  ])('off from either wins: args %j, annotation %s', (announce, text) => {
    expect(resolveOptions(both(announce, text), { raw: {} }).options.enabled).toBe(false);
  });

  it('names both when both turn it off', () => {
    const config = both(false, 'false');
    expect(config.podAnnounce?.from.enabled).toBe(`args.cni.announce, ${ANN}`);
    expect(resolveOptions(config, { raw: {} }).notes).toContainEqual({
      level: 'info',
      msg: 'announcing turned off for this attachment',
      fields: { by: `args.cni.announce, ${ANN}` },
    });
  });

  it("ignores a request to announce beside the other channel's off, with a warning", () => {
    expect(both(true, 'false').podAnnounce?.ignored).toEqual([
      {
        field: 'args.cni.announce.enabled',
        value: true,
        reason: `turned off by ${ANN}: a request to announce does not turn announcing back on`,
      },
    ]);
    expect(both(false, 'true').podAnnounce?.ignored).toEqual([
      {
        field: `${ANN}.enabled`,
        value: true,
        reason: 'turned off by args.cni.announce: a request to announce does not turn announcing back on',
      },
    ]);
  });

  it("takes args.cni.announce for a field both set, and logs the annotation's other value as ignored", () => {
    const config = both({ count: 3 }, '{"count":2,"arpOp":"both"}');
    expect(config.podAnnounce).toEqual({
      overrides: { count: 3, arpOp: 'both' },
      ignored: [{ field: `${ANN}.count`, value: 2, reason: 'args.cni.announce sets it (3) and comes first' }],
      from: { count: 'args.cni.announce', arpOp: ANN },
    });
    expect(resolveOptions(config, { raw: {} }).options).toMatchObject({ count: 3, arpOp: 'both', enabled: true });
  });

  it('says nothing when both set a field to the same value', () => {
    expect(both({ count: 2 }, '{"count":2}').podAnnounce).toEqual({
      overrides: { count: 2 },
      ignored: [],
      from: { count: 'args.cni.announce' },
    });
  });

  it('reports the problems of both', () => {
    expect(
      configError({
        ...withAnnotation('{"count":11}', { podOverrides: ['count'] }),
        args: { cni: { announce: { count: 12 } } },
      }).message,
    ).toBe(
      `invalid config: "args.cni.announce.count" must be an integer from 0 to 10 (got 12); ${ANN}: ` +
        `"count" must be an integer from 0 to 10 (got 11)`,
    );
  });
});

describe('examples/containerd-annotations-conflist.json', () => {
  it("declares the capability, so that a pod's annotation reaches the announcer", () => {
    const list = JSON.parse(
      readFileSync(
        fileURLToPath(new URL('../../../examples/containerd-annotations-conflist.json', import.meta.url)),
        'utf8',
      ),
    ) as { cniVersion: string; name: string; plugins: Record<string, unknown>[] };
    const entry = list.plugins.find((p) => p.type === 'announcer');
    const sent = (text: string) => ({
      ...entry,
      cniVersion: list.cniVersion,
      name: list.name,
      runtimeConfig: { [CAP]: { 'cni-announcer/announce': text } },
    });
    expect(resolveOptions(parseConfig(sent('false')), { raw: {} }).options.enabled).toBe(false);
    expect(resolveOptions(parseConfig(sent('{"count":1}')), { raw: {} }).options.count).toBe(1);
  });
});

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
