// The layers follow the process model: the shim at the top, then the announcer (src/daemon/),
// which hosts the commands; src/commands/ and src/announce/ never import up into src/daemon/,
// src/shim/ or src/process/ (type-only imports included: a type names what the layer depends on).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');
const UPPER = ['daemon', 'shim', 'process'];

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

describe('layering', () => {
  it('commands/ and announce/ import nothing from daemon/, shim/ or process/', () => {
    const upward = ['commands', 'announce'].flatMap((layer) =>
      filesOf(join(SRC, layer)).flatMap((file) =>
        importsOf(file)
          .filter((target) => UPPER.some((upper) => target.startsWith(`${upper}/`)))
          .map((target) => `${relative(SRC, file)} → ${target}`),
      ),
    );
    expect(upward).toEqual([]);
  });
});
