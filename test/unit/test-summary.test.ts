// scripts/test-summary.mjs, run by `make test` after vitest: the skipped tests by file, then the closing line CI reads.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useTempDir } from '../support/temp-dir';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
let dir: string;
useTempDir('test-summary-', (d) => (dir = d));

/** Runs the script from the repository root on `report` (vitest's JSON reporter shape). */
function summarise(report: unknown): string {
  const file = join(dir, 'vitest.json');
  writeFileSync(file, JSON.stringify(report));
  return execFileSync('node', [join(ROOT, 'scripts/test-summary.mjs'), file], { cwd: ROOT, encoding: 'utf8' });
}

const test = (status: string, title: string, ancestorTitles: string[] = ['suite']) => ({
  status,
  title,
  ancestorTitles,
});

describe('test-summary.mjs', () => {
  it('lists the skipped and todo tests under their files, then the closing line', () => {
    const out = summarise({
      numPassedTests: 2,
      numFailedTests: 1,
      numPendingTests: 2,
      numTodoTests: 1,
      testResults: [
        { name: join(ROOT, 'test/unit/a.test.ts'), assertionResults: [test('passed', 'a1'), test('failed', 'a2')] },
        {
          name: join(ROOT, 'test/integration/b.test.ts'),
          assertionResults: [
            test('skipped', 'b1', ['outer', 'inner']),
            test('passed', 'b2'),
            test('pending', 'b3'),
            test('todo', 'b4'),
          ],
        },
      ],
    });
    expect(out).toBe(
      [
        'skipped tests, by file:',
        '  test/integration/b.test.ts (3)',
        '    outer > inner > b1',
        '    suite > b3 [pending]',
        '    suite > b4 [todo]',
        '2 passed, 1 failed, 3 skipped',
        '',
      ].join('\n'),
    );
  });

  it('prints only the closing line when nothing was skipped', () => {
    const out = summarise({
      numPassedTests: 1,
      numFailedTests: 0,
      numPendingTests: 0,
      numTodoTests: 0,
      testResults: [{ name: join(ROOT, 'x.test.ts'), assertionResults: [test('passed', 'x')] }],
    });
    expect(out).toBe('1 passed, 0 failed, 0 skipped\n');
  });
});
