import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BUILD_ID_PATTERN, buildId, buildInputs } from '../../../scripts/build/build-id';
import { useTempDir } from '../../support/temp-dir';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SETTINGS = { bun: '1.4.5', arch: 'x64', bytecode: true };
const text = (s: string) => new TextEncoder().encode(s);

describe('buildId', () => {
  const inputs = [
    { path: 'src/a.ts', content: text('a') },
    { path: 'src/b.ts', content: text('b') },
  ];

  it('is 16 hex digits, the same for the same inputs and settings in any order', () => {
    const id = buildId(inputs, SETTINGS);
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(BUILD_ID_PATTERN.test(id)).toBe(true);
    expect(buildId([...inputs].reverse(), { bytecode: true, arch: 'x64', bun: '1.4.5' })).toBe(id);
  });

  it("changes with any file's bytes or path, and with any setting", () => {
    const id = buildId(inputs, SETTINGS);
    const others = [
      buildId([inputs[0]!, { path: 'src/b.ts', content: text('B') }], SETTINGS),
      buildId([inputs[0]!, { path: 'src/c.ts', content: text('b') }], SETTINGS),
      buildId([inputs[0]!], SETTINGS),
      // One file whose bytes spell out both: the lengths keep files apart.
      buildId([{ path: 'src/a.ts', content: text('asrc/b.ts\0b') }], SETTINGS),
      buildId(inputs, { ...SETTINGS, bytecode: false }),
      buildId(inputs, { ...SETTINGS, arch: 'arm64' }),
      buildId(inputs, { ...SETTINGS, cpu: 'modern' }),
    ];
    expect(new Set([id, ...others]).size).toBe(others.length + 1);
  });
});

describe('buildInputs', () => {
  let dir: string;
  useTempDir('announcer-build-id-', (d) => (dir = d));

  it("lists src/, the build's scripts, the package files and the entry, by path relative to the checkout", () => {
    const paths = buildInputs(ROOT, 'scripts/bench/empty-entry.ts').map((i) => i.path);
    for (const p of [
      'src/main.ts',
      'src/native/assets.d.ts',
      'src/about.ts',
      'scripts/build.mjs',
      'scripts/build/plugin.ts',
      'package.json',
      'package-lock.json',
      'scripts/bench/empty-entry.ts',
    ]) {
      expect(paths).toContain(p);
    }
    expect(paths.filter((p) => p.startsWith('/') || p.includes('..'))).toEqual([]);
    expect(new Set(paths).size).toBe(paths.length);
  });

  it('gives the same id wherever the checkout lies, and another when a source file changes', () => {
    const copy = (name: string) => {
      const at = join(dir, name);
      for (const p of ['src', 'scripts/build']) cpSync(join(ROOT, p), join(at, p), { recursive: true });
      for (const p of ['scripts/build.mjs', 'package.json', 'package-lock.json']) {
        mkdirSync(dirname(join(at, p)), { recursive: true });
        cpSync(join(ROOT, p), join(at, p));
      }
      return at;
    };
    const [a, b] = [copy('a'), copy('elsewhere/b')];
    const id = (at: string) => buildId(buildInputs(at, 'src/main.ts'), SETTINGS);
    expect(id(a)).toBe(id(b));
    expect(id(a)).toBe(id(ROOT));
    writeFileSync(join(b, 'src/native/extra.ts'), '');
    expect(id(b)).not.toBe(id(a));
  });
});
