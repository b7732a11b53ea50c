// zod in the built plugin: `announcer schema` run as the built executable prints the conflist
// entry's JSON Schema; and the bundle, split into chunks as scripts/build.mjs splits it, keeps
// zod out of every chunk VERSION and the shim's path evaluate, while the announcer's and the
// verbs' chunks carry it.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { announcerCli, runOk } from './harness';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

describe('announcer schema, the built executable', () => {
  const printsDraftJSONTitle =
    'prints a draft-07 JSON Schema of the conflist entry, on stdout alone, with every option and its default';
  it(printsDraftJSONTitle, async () => {
    const res = await announcerCli(['schema']);
    expect([res.code, res.stderr]).toEqual([0, '']);
    const schema = JSON.parse(res.stdout) as {
      $schema: string;
      required: string[];
      properties: Record<string, { default?: unknown }>;
    };
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
    expect(schema.required).toEqual(['type']);
    expect(schema.properties.count).toMatchObject({
      default: 3,
      type: 'integer',
      minimum: 0,
      maximum: 10,
      description: expect.stringMatching(/^Rounds/),
    });
    expect(schema.properties.stateDir?.default).toBe('/run/cni-announcer');
  });

  it('refuses arguments with exit 2', async () => {
    const res = await announcerCli(['schema', '--draft=2020-12']);
    expect([res.code, res.stdout, res.stderr]).toEqual([2, '', 'announcer schema: takes no arguments\n']);
  });
});

interface Chunk {
  inputs: string[];
  imports: { path: string; kind: string }[];
  entryPoint?: string;
}

describe("the bundle's chunks (test/support/bundle-chunks.mjs: scripts/build.mjs's split, without compiling)", () => {
  let chunks: Record<string, Chunk>;
  beforeAll(async () => {
    const res = await runOk(join(ROOT, 'node_modules/.bin/bun'), [join(ROOT, 'test/support/bundle-chunks.mjs')], {
      timeoutMs: 120_000,
    });
    chunks = JSON.parse(res.stdout);
  }, 120_000);

  /**
   * The chunk a dynamic import of `entry` loads, and every chunk it imports statically: what evaluating it evaluates.
   */
  const reached = (kinds: string[], entries: string[]): Set<string> => {
    const names = Object.keys(chunks);
    const pending = entries.map((e) => names.find((n) => chunks[n]!.entryPoint === e) ?? `(no chunk for ${e})`);
    const seen = new Set<string>();
    for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
      if (seen.has(name)) continue;
      seen.add(name);
      if (chunks[name] === undefined) throw new Error(`unknown chunk ${name}`);
      pending.push(...chunks[name]!.imports.filter((i) => kinds.includes(i.kind)).map((i) => i.path));
    }
    return seen;
  };
  const evaluated = (...entries: string[]): Set<string> => reached(['import-statement'], entries);
  /** Every chunk `entries` may come to evaluate, through their dynamic imports too. */
  const mayLoad = (...entries: string[]): Set<string> => reached(['import-statement', 'dynamic-import'], entries);
  const zodIn = (set: Set<string>): string[] =>
    [...set].flatMap((n) => chunks[n]!.inputs.filter((i) => /node_modules\/zod\//.test(i)));

  /** The modules src/shim/shim.ts imports dynamically: what a cold start, or a failure's report, loads. */
  const shimDepsLazy = (): string[] =>
    [...readFileSync(join(ROOT, 'src/shim/shim.ts'), 'utf8').matchAll(/import\('(\.[^']+)'\)/g)].map((m) => {
      // The binary takes a module's Bun twin where one exists (scripts/build/plugin.ts).
      const base = relative(ROOT, resolve(ROOT, 'src/shim', m[1]!));
      return existsSync(join(ROOT, `${base}.bun.ts`)) ? `${base}.bun.ts` : `${base}.ts`;
    });

  it('leave zod out of start-up, which holds VERSION and the shim, and out of what a cold start loads', () => {
    // main.ts imports VERSION's answer and the shim statically: they are in what start-up evaluates.
    const start = evaluated('src/main.ts');
    const startInputs = [...start].flatMap((n) => chunks[n]!.inputs);
    for (const module of ['src/cni/versions.ts', 'src/shim/shim.ts', 'src/sys/stdio.bun.ts'])
      expect(startInputs).toContain(module);
    // Whatever the shim loads to start an announcer, or to report one that cannot answer (a list kept by hand missed
    // the record schema, and zod with it, that a cold start loaded for one message).
    const lazy = shimDepsLazy();
    expect(lazy).toContain('src/shim/start.ts');
    const cold = mayLoad(...lazy.filter((m) => !startInputs.includes(m)));
    expect([...cold].flatMap((n) => chunks[n]!.inputs)).toContain('src/sys/spawn-child.bun.ts');
    expect({ start: zodIn(start), cold: zodIn(cold) }).toEqual({ start: [], cold: [] });
  });

  it('put zod in what the announcer and `announcer schema` evaluate (the walk sees it where it is)', () => {
    const announcer = zodIn(evaluated('src/cli.ts'));
    expect(announcer).toContain('node_modules/zod/v4/mini/schemas.js');
    // zod's JSON Schema export comes with `announcer schema` alone.
    expect(announcer.filter((f) => /json-schema/.test(f))).toEqual([]);
    expect(zodIn(evaluated('src/cni/config.ts'))).toContain('node_modules/zod/v4/mini/schemas.js');
    expect(zodIn(evaluated('src/commands/schema.ts'))).toContainEqual(expect.stringMatching(/json-schema/));
  });
});
