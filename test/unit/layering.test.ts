// The layers follow the process model: the shim at the top, then the announcer (src/daemon/), which hosts the
// commands; src/commands/ and src/announce/ never import up into src/daemon/ or src/shim/, and src/cni/, src/wire/
// and src/sys/ (the protocol, the frames, the syscalls) into none of those four (type-only imports included: a type
// names what the layer depends on). src/protocol.ts, between the shim and the announcer, belongs to neither.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

function filesOf(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesOf(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Each relative module specifier in `file` (static, re-export, type-only and dynamic), resolved under src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import\()\s*'(\.[^']+)'/g)].map((m) => m[1]!);
  return specifiers.map((s) => relative(SRC, resolve(dirname(file), s)));
}

/** Each import from a module of `layers` into one of `upper`, as `file → target`. */
function upward(layers: readonly string[], upper: readonly string[]): string[] {
  return layers.flatMap((layer) =>
    filesOf(join(SRC, layer)).flatMap((file) =>
      importsOf(file)
        .filter((target) => upper.some((u) => target.startsWith(`${u}/`)))
        .map((target) => `${relative(SRC, file)} → ${target}`),
    ),
  );
}

describe('layering', () => {
  it('commands/ and announce/ import nothing from daemon/ or shim/', () => {
    expect(upward(['commands', 'announce'], ['daemon', 'shim'])).toEqual([]);
  });

  it('cni/, wire/ and sys/ import nothing from daemon/, shim/, commands/ or announce/', () => {
    expect(upward(['cni', 'wire', 'sys'], ['daemon', 'shim', 'commands', 'announce'])).toEqual([]);
  });

  it('protocol.ts, between the shim and the announcer, imports from neither', () => {
    expect(importsOf(join(SRC, 'protocol.ts')).filter((t) => /^(daemon|shim)\//.test(t))).toEqual([]);
  });
});
