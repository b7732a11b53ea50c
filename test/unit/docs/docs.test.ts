// The docs against the code: the README stays short, every relative link in the
// README and docs/ leads to a file (and a heading, for a Markdown anchor), the
// configuration table is OPTIONS (names, order, defaults, who sets them), and
// every `make` target with a help comment is in the docs.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { OPTIONS, type OptionScope } from '../../../src/cni/option-schema';
import { anchorsOf, relativeLinks, slug, tableRows } from '../../support/markdown';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** What the README's "Set by" column says for each scope. */
const SET_BY: Record<OptionScope, string> = { pod: 'pod', attachment: 'conflist', network: 'network', node: 'node' };

describe('README.md', () => {
  it('is at most 300 lines', () => {
    const lines = read('README.md').split('\n');
    expect(lines.at(-1)).toBe(''); // ends with a newline
    expect(lines.length - 1).toBeLessThanOrEqual(300);
  });

  it('gives `make demo` and `make test` as the quick start', () => {
    const block = /## Quick start\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(read('README.md'))?.[1] ?? '';
    expect(
      block
        .split('\n')
        .filter(Boolean)
        .map((l) => l.replace(/\s*#.*$/, '')),
    ).toEqual(['make demo', 'make test']);
  });
});

describe('the configuration table', () => {
  const rows = tableRows(read('README.md'), '## Configuration');
  const byName = new Map(rows.map((cells) => [/^`(\w+)`$/.exec(cells[0]!)?.[1], cells]));

  it('lists exactly the keys of OPTIONS, in their order', () => {
    expect([...byName.keys()]).toEqual(Object.keys(OPTIONS));
  });

  it("gives each option's default as OPTIONS has it (JSON), or none", () => {
    for (const [name, option] of Object.entries(OPTIONS)) {
      const cell = byName.get(name)?.[2] ?? '';
      if (option.fallback === undefined) expect(cell, name).toMatch(/^none\b/);
      else expect(cell, name).toBe(`\`${JSON.stringify(option.fallback)}\``);
    }
  });

  it('says who sets each option, by its scope', () => {
    for (const [name, option] of Object.entries(OPTIONS))
      expect(byName.get(name)?.[3], name).toBe(SET_BY[option.scope]);
  });
});

describe('links in README.md and docs/', () => {
  it.each(DOCS)('%s: every relative link resolves to a file, and an anchor to a heading there', (doc) => {
    const text = read(doc);
    const broken: string[] = [];
    for (const link of relativeLinks(text)) {
      const target = link.path === '' ? doc : relative(ROOT, resolve(ROOT, dirname(doc), link.path));
      if (!existsSync(join(ROOT, target))) broken.push(`${doc}:${link.line}: ${link.path} (no such file)`);
      else if (link.anchor !== undefined && target.endsWith('.md') && !anchorsOf(read(target)).has(link.anchor)) {
        broken.push(`${doc}:${link.line}: ${target}#${link.anchor} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('finds the links it checks (a reader that sees none would pass anything)', () => {
    expect(relativeLinks(read('README.md')).length).toBeGreaterThan(10);
    expect(relativeLinks('[a](docs/x.md#y) `[b](c.md)` [w](https://x.y/z)\n```\n[d](e.md)\n```\n[f](#g)')).toEqual([
      { path: 'docs/x.md', anchor: 'y', line: 1 },
      { path: '', anchor: 'g', line: 5 },
    ]);
  });

  it('anchors headings as GitHub does', () => {
    expect(slug("The DaemonSet's announcer and the fallback")).toBe('the-daemonsets-announcer-and-the-fallback');
    expect(slug('`announcer status`')).toBe('announcer-status');
    expect([...anchorsOf('# A b\n## A b\n```\n# C\n```\n### Files and locks in stateDir')]).toEqual([
      'a-b',
      'a-b-1',
      'files-and-locks-in-statedir',
    ]);
  });
});

describe('the Makefile', () => {
  it('has every target with a help comment (##) named in the docs as `make <target>`', () => {
    const targets = [...read('Makefile').matchAll(/^## ([\w-]+):/gm)].map((m) => m[1]!);
    expect(targets.length).toBeGreaterThan(5);
    const docs = DOCS.map(read).join('\n');
    expect(targets.filter((t) => !new RegExp(`make ${t}(?![\\w-])`).test(docs))).toEqual([]);
  });
});
