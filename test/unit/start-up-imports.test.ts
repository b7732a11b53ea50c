// What the plugin loads before it knows its command: the static import graph of src/main.ts.
// VERSION (and every command's start-up) must not build the options' schemas; those come in
// through dispatch's lazy import('./config') and import('./options'). zod (the validation
// library) is loaded only by the announcer and the verbs (cli.ts loads it), and by a
// CNI call only to say what is wrong with a config it cannot forward (dispatch);
// test/integration/schema-and-zod.test.ts checks the same in the bundle's chunks.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The modules a file loads when it is loaded: static imports and re-exports, not `import type` nor `import(…)`;
 * relative ones resolved, packages as named.
 */
function staticSpecifiers(file: string): { relative: string[]; packages: string[] } {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022);
  const specifiers: ts.Expression[] = [];
  for (const stmt of source.statements) {
    if (ts.isImportDeclaration(stmt) && !typeOnly(stmt.importClause)) specifiers.push(stmt.moduleSpecifier);
    if (ts.isExportDeclaration(stmt) && !stmt.isTypeOnly && stmt.moduleSpecifier) specifiers.push(stmt.moduleSpecifier);
  }
  const texts = specifiers.map((s) => (s as ts.StringLiteral).text);
  return {
    relative: texts
      .filter((s) => s.startsWith('.'))
      .map((s) => resolveTs(dirname(file), s))
      .filter((f) => f !== undefined),
    packages: texts.filter((s) => !s.startsWith('.')),
  };
}

/** The relative modules a file loads when it is loaded. */
function staticImports(file: string): string[] {
  return staticSpecifiers(file).relative;
}

/** The npm packages (and builtins) the files of `graph` load when loaded. */
function packagesOf(graph: Set<string>): Set<string> {
  return new Set([...graph].flatMap((f) => staticSpecifiers(join(ROOT, f)).packages));
}

/** Whether a specifier names zod or one of its entries (zod/mini, zod/v4/core...). */
const isZod = (specifier: string): boolean => specifier === 'zod' || specifier.startsWith('zod/');

/** Whether an import is erased: `import type …`, or only `type` names (TypeScript and Bun drop those too). */
function typeOnly(clause: ts.ImportClause | undefined): boolean {
  if (clause === undefined) return false; // import './x': a side effect
  if (clause.isTypeOnly) return true;
  const named = clause.namedBindings;
  if (clause.name !== undefined || named === undefined || !ts.isNamedImports(named)) return false;
  return named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
}

/**
 * The .ts file a relative specifier names in the binary (its Bun twin, X.bun.ts, where one exists:
 * scripts/build/plugin.ts); undefined for anything else (package.json).
 */
function resolveTs(from: string, specifier: string): string | undefined {
  const base = resolve(from, specifier);
  return [`${base}.bun.ts`, `${base}.ts`, join(base, 'index.ts')].find((f) => existsSync(f));
}

/** Every source file loaded with `entry`, as paths relative to the repository. */
function staticGraph(entry: string): Set<string> {
  const seen = new Set<string>();
  const pending = [join(ROOT, entry)];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    const rel = relative(ROOT, file);
    if (seen.has(rel)) continue;
    seen.add(rel);
    pending.push(...staticImports(file));
  }
  return seen;
}

describe("start-up's static imports", () => {
  it('leave the options, their schemas and the config parser to the commands that need them', () => {
    const graph = staticGraph('src/main.ts');
    expect(graph).toContain('src/about.ts');
    for (const lazy of [
      'src/cni/config.ts',
      'src/cni/options.ts',
      'src/cni/option-schema.ts',
      'src/cni/zod-checks.ts',
    ]) {
      expect(graph).not.toContain(lazy);
    }
    expect([...packagesOf(graph)].filter(isZod)).toEqual([]);
  });

  it('leave zod to the announcer, the verbs and the config check: not VERSION', () => {
    const version = new Set([...staticGraph('src/cni/versions.ts'), ...staticGraph('src/cni/decode.ts')]);
    expect([...packagesOf(version)].filter(isZod)).toEqual([]);
    // The walk sees zod where it is loaded.
    for (const user of ['src/cli.ts', 'src/cni/config.ts', 'src/commands/schema.ts']) {
      expect([...packagesOf(staticGraph(user))], user).toContain('zod/mini');
    }
  });

  it("leave FFI and validation off the shim's path: its modules, and the unix-stream twin it loads", () => {
    const graph = new Set([
      ...staticGraph('src/shim/shim.ts'),
      ...staticGraph('src/sys/unix-stream.ts'),
      ...staticGraph('src/shim/start.ts'),
      ...staticGraph('src/sys/private-dir.ts'),
      ...staticGraph('src/sys/spawn-child.ts'),
    ]);
    expect(graph).toContain('src/protocol.ts');
    expect(graph).toContain('src/sys/unix-stream.bun.ts');
    // The shim answers with errors.ts's codes: that module must stay one that loads nothing.
    expect(graph).toContain('src/cni/errors.ts');
    expect(staticSpecifiers(join(ROOT, 'src/cni/errors.ts'))).toEqual({ relative: [], packages: [] });
    const banned = [...graph].filter(
      (f) =>
        f === 'src/sys/libc.ts' ||
        f.startsWith('src/native/') ||
        /^src\/cni\/(config|options|option-schema|zod-checks)\.ts$/.test(f),
    );
    expect(banned).toEqual([]);
    expect([...packagesOf(graph)].filter(isZod)).toEqual([]);
  });

  const leaveNodeFsTitle =
    "leave node:fs off the shim's fast path (main, the shim, Bun's twins): it costs a Bun run 1.6 ms and 5.6 MiB";
  it(leaveNodeFsTitle, () => {
    const fast = ['src/main.ts', 'src/shim/shim.ts'];
    const graph = new Set(fast.flatMap((entry) => [...staticGraph(entry)]));
    const importsFs = (file: string): boolean =>
      /^import [^;]* from 'node:fs';$/m.test(readFileSync(join(ROOT, file), 'utf8'));
    expect(graph).toContain('src/protocol.ts');
    expect(graph).toContain('src/sys/stdio.bun.ts');
    expect(graph).not.toContain('src/sys/stdio.ts');
    expect([...graph].filter(importsFs)).toEqual([]);
    // The walk sees it where it is: the Node twin and the cold start.
    expect(importsFs('src/sys/stdio.ts') && importsFs('src/shim/start.ts')).toBe(true);
  });

  const leavePromClientTitle =
    "leave prom-client and the HTTP endpoint to the announcer: neither start-up nor the shim's path loads them";
  it(leavePromClientTitle, () => {
    const startUp = [
      ...staticGraph('src/main.ts'),
      ...staticGraph('src/shim/shim.ts'),
      ...staticGraph('src/shim/start.ts'),
    ];
    const importsProm = (file: string): boolean => /from 'prom-client/.test(readFileSync(join(ROOT, file), 'utf8'));
    expect(startUp.filter((f) => importsProm(f) || /^src\/daemon\//.test(f))).toEqual([]);
    // The walk sees them where they are.
    // The announcer loads the registry on first use (metrics.ts's LazyMetrics): not before it listens.
    const announcer = staticGraph('src/daemon/daemon.ts');
    expect(announcer).toContain('src/daemon/http.ts');
    expect(announcer).toContain('src/daemon/metrics.ts');
    expect([...announcer].filter(importsProm)).toEqual([]);
    expect(readFileSync(join(ROOT, 'src/daemon/metrics.ts'), 'utf8')).toContain("await import('./prometheus')");
    // Its modules one by one: the index also loads the Pushgateway (node:http, https, zlib) and node:cluster.
    const specifiers = [
      ...readFileSync(join(ROOT, 'src/daemon/prometheus.ts'), 'utf8').matchAll(/from '(prom-client[^']*)'/g),
    ].map((m) => m[1]);
    const got = specifiers.sort();
    expect(got).toEqual(['prom-client/lib/counter', 'prom-client/lib/histogram', 'prom-client/lib/registry']);
  });

  it('are followed through a value import (the walk would see a regression)', () => {
    expect(staticGraph('src/cni/options.ts')).toContain('src/cni/zod-checks.ts');
  });
});
