// `announcer schema` (src/commands/schema.ts): the conflist entry's JSON Schema, made by zod's
// toJSONSchema. ajv (draft-07) checks with it every announcer entry this repository ships
// (examples/, deploy/, README's conflists), refuses bad entries, and agrees with parseConfig
// itself on every option's values: the schema and the plugin read the same OPTIONS. What JSON Schema
// cannot express (the rules across fields, an interface name's rules) its descriptions name: each
// rule is tried with an entry the schema lets through and the plugin refuses.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { entryJsonSchema } from '../../../src/commands/schema';
import { BURST_RULE, IFNAME_RULE, SKIP_RULE } from '../../../src/commands/schema';
import { parseConfig } from '../../../src/cni/config';
import { OPTIONS } from '../../../src/cni/option-schema';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const validate = new Ajv({ strict: true, allErrors: true }).compile(entryJsonSchema());
const valid = (entry: unknown): boolean => validate(entry) === true;
/** What parseConfig says of `entry`, placed in a conflist named podnet. */
const parses = (entry: object): boolean => {
  try {
    parseConfig({ cniVersion: '1.0.0', name: 'podnet', ...entry });
    return true;
  } catch {
    return false;
  }
};

/** The announcer entries of a conflist (or of one plugin config), wherever `doc` holds one. */
function announcerEntries(doc: unknown): unknown[] {
  if (typeof doc === 'string') {
    try {
      return announcerEntries(JSON.parse(doc));
    } catch {
      return [];
    }
  }
  if (doc === null || typeof doc !== 'object') return [];
  if ((doc as { type?: unknown }).type === 'announcer') return [doc];
  return Object.values(doc).flatMap(announcerEntries);
}

/**
 * Every announcer entry of examples/*.json, deploy/*.yaml (conflists in a NAD's spec.config, or any string) and
 * README's ```json blocks.
 */
function shippedEntries(): { where: string; entry: unknown }[] {
  const found: { where: string; entry: unknown }[] = [];
  const add = (where: string, entries: unknown[]) =>
    found.push(...entries.map((entry, i) => ({ where: `${where} #${i + 1}`, entry })));
  for (const f of readdirSync(join(ROOT, 'examples')).filter((f) => f.endsWith('.json'))) {
    add(`examples/${f}`, announcerEntries(JSON.parse(readFileSync(join(ROOT, 'examples', f), 'utf8'))));
  }
  for (const f of readdirSync(join(ROOT, 'deploy')).filter((f) => /\.ya?ml$/.test(f))) {
    add(
      `deploy/${f}`,
      parseAllDocuments(readFileSync(join(ROOT, 'deploy', f), 'utf8')).flatMap((d) => announcerEntries(d.toJS())),
    );
  }
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  add(
    'README.md',
    [...readme.matchAll(/```json\n([\s\S]*?)```/g)].flatMap((m) => announcerEntries(m[1])),
  );
  return found;
}

describe('the JSON Schema of `announcer schema`', () => {
  const shipped = shippedEntries();

  it('finds the entries this repository ships: both examples, the NAD, README', () => {
    const where = shipped.map((s) => s.where.split(' ')[0]);
    const examples = ['examples/bridge-conflist.json', 'examples/macvlan-conflist.json'];
    const expected = expect.arrayContaining([...examples, 'deploy/network-attachment-definition.yaml', 'README.md']);
    expect(where).toEqual(expected);
  });

  it.each(shippedEntries().map((s) => [s.where, s.entry]))('validates the entry of %s', (_where, entry) => {
    expect(valid(entry), JSON.stringify(validate.errors)).toBe(true);
    expect(parses(entry as object)).toBe(true);
  });

  it.each([
    ['count out of range', { count: 11 }],
    ['a fractional count', { count: 1.5 }],
    ['a count as text', { count: '3' }],
    ['an unknown ARP op', { arpOp: 'gratuitous' }],
    ['a multicast MAC prefix', { macPrefix: '01:00' }],
    ['a MAC prefix of three bytes', { macPrefix: '0a:58:00' }],
    ['a relative log file', { logFile: 'var/log/a.log' }],
    ['an unknown pod override', { podOverrides: ['everything'] }],
    ['interfaces as one string', { interfaces: 'eth0' }],
    ['ipv4 as text', { ipv4: 'yes' }],
    ['an unknown gateway check', { gatewayCheck: 'on' }],
    ['a gateway check window too short', { gatewayCheckMs: 49 }],
  ])('refuses an entry with %s, as parseConfig does', (_what, fields) => {
    const entry = { type: 'announcer', ...fields };
    expect(valid(entry)).toBe(false);
    expect(parses(entry)).toBe(false);
  });

  it('describes every option, for editors', () => {
    const { properties } = entryJsonSchema() as { properties: Record<string, { description?: string }> };
    const undescribed = Object.keys(OPTIONS).filter((k) => !properties[k]?.description);
    expect([Object.keys(OPTIONS).length, undescribed]).toEqual([24, []]);
  });

  it('refuses an entry without a type', () => {
    expect(valid({ count: 3 })).toBe(false);
    expect(valid({ type: 'announcer' })).toBe(true);
  });

  it("agrees with parseConfig on each option's values (but interfaces, whose names a function checks)", () => {
    const numbers = [
      -1, 0, 0.5, 1, 1.5, 2, 3, 4, 4.5, 9, 10, 11, 49, 50, 99, 100, 2000, 2001, 10000, 10001, 30000, 30001, 60000,
      60001, 600000, 600001, 3600000, 3600001,
    ];
    const words = 'x /abs rel/x 0a:58 02:AB 03:00 request both ip-derived keep fail off report require debug trace';
    const lists = [[], ['count'], ['enabled=false', 'mac=keep'], ['enabled'], ['gatewayCheck', 'gatewayCheckMs']];
    const objects = [{ framesPerSecond: 10, burst: 20 }, { framesPerSecond: 0, burst: 1 }, {}];
    const values = [...numbers, true, false, null, '', ...words.split(' '), ...lists, ...objects];
    const schema = entryJsonSchema() as { properties: Record<string, unknown> };
    const options = Object.keys(schema.properties).filter((k) => !['type', 'capabilities', 'interfaces'].includes(k));
    expect(options).toHaveLength(23);
    const disagreements = options.flatMap((key) =>
      values
        .filter((v) => valid({ type: 'announcer', [key]: v }) !== parses({ type: 'announcer', [key]: v }))
        .map((v) => `${key}: ${JSON.stringify(v)}`),
    );
    expect(disagreements).toEqual([]);
  });
});

describe('the rules the plugin enforces beyond JSON Schema', () => {
  const schema = entryJsonSchema() as { description: string; properties: Record<string, { description: string }> };
  const entry = schema.description;
  const names = schema.properties.interfaces!.description;

  // Each case: an entry the schema lets through and parseConfig refuses, where its rule is named, and how.
  const namedRuleTitle = '%s: the schema lets it through, the plugin refuses it, and a description names the rule';
  it.each([
    ['the burst cap, on the conflist', { count: 10, intervalMs: 60000, backoff: 4 }, entry, [BURST_RULE]],
    [
      'the burst cap, with what a pod may change',
      { podOverrides: ['count'], args: { cni: { announce: { count: 10 } } }, intervalMs: 60000, backoff: 2 },
      entry,
      ['again with what a pod may change (podOverrides)'],
    ],
    ['skip with an IP-derived MAC', { onUnavailable: 'skip', mac: 'ip-derived' }, entry, ['mac "ip-derived"']],
    ['skip with conflictCheck fail', { onUnavailable: 'skip', conflictCheck: 'fail' }, entry, ['conflictCheck "fail"']],
    [
      'skip with gatewayCheck require',
      { onUnavailable: 'skip', gatewayCheck: 'require' },
      entry,
      ['gatewayCheck "require"'],
    ],
    [
      'skip with a pod allowed to ask for mac',
      { onUnavailable: 'skip', podOverrides: ['mac'] },
      entry,
      ['a podOverrides naming "mac"'],
    ],
    [
      'skip with a pod allowed to ask for gatewayCheck',
      { onUnavailable: 'skip', podOverrides: ['gatewayCheck'] },
      entry,
      ['a podOverrides naming "mac" or "gatewayCheck"'],
    ],
    ['an empty interface name', { interfaces: [''] }, names, ['1 to 15 bytes']],
    ['an interface name of 16 bytes', { interfaces: ['x'.repeat(16)] }, names, ['1 to 15 bytes']],
    ['an interface name of 8 characters, 16 bytes', { interfaces: ['é'.repeat(8)] }, names, ['bytes of UTF-8']],
    ['"." as an interface name', { interfaces: ['.'] }, names, ['not "." or ".."']],
    ['".." as an interface name', { interfaces: ['..'] }, names, ['not "." or ".."']],
    ['an interface name with "/"', { interfaces: ['a/b'] }, names, ['without "/", ":" or whitespace']],
    ['an interface name with ":"', { interfaces: ['eth0:1'] }, names, ['without "/", ":" or whitespace']],
    ['an interface name with a space', { interfaces: ['eth 0'] }, names, ['without "/", ":" or whitespace']],
  ])(namedRuleTitle, (_what, fields, doc, says) => {
    const config = { type: 'announcer', ...fields };
    expect(valid(config)).toBe(true);
    expect(parses(config)).toBe(false);
    for (const text of says) expect(doc).toContain(text);
  });

  it('names the cross-field rules in the entry, and each again where an editor hovers over its fields', () => {
    expect(entry).toContain(BURST_RULE);
    expect(entry).toContain(SKIP_RULE);
    expect(schema.properties.onUnavailable!.description).toContain(SKIP_RULE);
    for (const key of ['count', 'intervalMs', 'backoff'])
      expect(schema.properties[key]!.description, key).toContain('at most 10 min after the first (the burst cap)');
    expect(names).toContain(IFNAME_RULE);
  });
});
