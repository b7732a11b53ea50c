// The docs name files of the tree and tests by title: each must still be there, so that a module moved or a test
// renamed cannot leave a claim pointing at nothing.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const DOCS = [
  'README.md',
  'CHANGELOG.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const text = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
/** A path of the tree in backticks: `src/…`, `test/…`, `scripts/…`, `deploy/…`, `examples/…` (no glob). */
const PATH = /`((?:src|test|scripts|deploy|examples)\/[A-Za-z0-9_./-]+)`/g;
/** A test cited by title: `test/….test.ts`: "title" (… stands for left-out words). */
const TITLE = /`(test\/[^`]+\.test\.ts)`: "([^"]+)"/g;
/** Whitespace and string concatenation fold away, so a title split across source lines still matches. */
const folded = (s: string): string => s.replace(/['"]\s*\+\s*['"]/g, '').replace(/\s+/g, ' ');

describe.each(DOCS)('%s', (doc) => {
  it('names only files and folders that exist', () => {
    const missing = [...text(doc).matchAll(PATH)].map((m) => m[1]!).filter((p) => !existsSync(join(ROOT, p)));
    expect(missing).toEqual([]);
  });

  it('cites only test titles that its test file holds', () => {
    const stale = [...text(doc).matchAll(TITLE)].filter(([, file, title]) => {
      if (!existsSync(join(ROOT, file!))) return true;
      const source = folded(text(file!));
      return !title!.split('…').every((part) => source.includes(folded(part.trim())));
    });
    expect(stale.map(([cited]) => cited)).toEqual([]);
  });
});
