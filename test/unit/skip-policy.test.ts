// Every skip in test/ prints why: it goes through test/support/skip.ts.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { skipLine, skipUnless } from '../support/skip';
import { APPROVED_CONDITIONS, bareSkips } from '../support/skip-scan';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The policy's own sources name the forms they forbid. */
const POLICY_FILES = ['test/support/skip.ts', 'test/support/skip-scan.ts', 'test/unit/skip-policy.test.ts'];

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(path);
    return e.name.endsWith('.ts') ? [relative(ROOT, path)] : [];
  });
}

describe('bareSkips', () => {
  it.each([
    'describe.skipIf(!isRoot)("x", () => {',
    'it.skipIf(NO_STRACE)("x", async () => {',
    'it.skipIf(process.getuid() !== 0)("x", () => {',
    'it.skipIf(skipIntegration)("x", () => {',
    'test.skip("x", () => {',
    'describe.skip("x", () => {',
    'it.skip.each([1])("x", () => {',
    '  ctx.skip("no ipvlan");',
    'it.runIf(isRoot)("x", () => {',
    'it.todo("x");',
    'it("x", { skip: true }, () => {',
    'it("x", async ({ skip }) => {',
  ])('flags %s', (line) => {
    expect(bareSkips(`import x from 'y';\n${line}\n`)).toEqual([{ line: 2, problem: expect.any(String) }]);
  });

  it.each([
    'describe.skipIf(skipIntegration())("x", () => {',
    'it.skipIf(skipUnless("strace", STRACE_MISSING))("x", async () => {',
    'describe.skipIf( skipContainerd() )("x", () => {',
    ' * For `describe.skipIf(!isRoot)` and ctx.skip() in a doc comment',
    '// it.skip("x") in a comment',
    'const skipped = counters.rounds.skippedLate;',
  ])('lets %s pass', (line) => {
    expect(bareSkips(line)).toEqual([]);
  });
});

describe('the skips in test/', () => {
  it('all go through the helpers of test/support/skip.ts', () => {
    const bare = tsFiles(join(ROOT, 'test'))
      .filter((f) => !POLICY_FILES.includes(f))
      .flatMap((f) => bareSkips(readFileSync(join(ROOT, f), 'utf8')).map((b) => `${f}:${b.line}: ${b.problem}`));
    expect(bare).toEqual([]);
  });

  it('use conditions that each call skipUnless', () => {
    const sources = tsFiles(join(ROOT, 'test')).map((f) => readFileSync(join(ROOT, f), 'utf8'));
    for (const name of APPROVED_CONDITIONS.filter((n) => n !== 'skipUnless')) {
      const bodies = sources.flatMap((s) =>
        [...s.matchAll(new RegExp(`export function ${name}\\(\\): boolean \\{\\n([\\s\\S]*?)\\n\\}`, 'g'))].map(
          (m) => m[1],
        ),
      );
      expect(bodies, name).toHaveLength(1);
      expect(bodies[0], name).toMatch(/\bskipUnless\(/);
    }
  });
});

describe('skipUnless', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
  });
  const FILE = 'test/unit/skip-policy.test.ts';

  it('skips and prints the file, the capability and what is missing', () => {
    vi.stubEnv('CI', '');
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    expect(skipUnless('a frobnicator', 'frob is not installed')).toBe(true);
    expect(warn.mock.calls).toEqual([[`SKIP ${FILE}: needs a frobnicator: frob is not installed`]]);
    expect(skipLine(FILE, 'a frobnicator', 'frob is not installed', 'skip')).toBe(warn.mock.calls[0]?.[0]);
  });

  it('prints once per file and reason', () => {
    vi.stubEnv('CI', '');
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    expect([skipUnless('twice', 'gone'), skipUnless('twice', 'gone')]).toEqual([true, true]);
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('neither skips nor prints when the capability is there', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    expect(skipUnless('present', undefined)).toBe(false);
    expect(warn).not.toHaveBeenCalled();
  });

  it('under CI runs the tests (so they fail) unless the capability is a kernel feature', () => {
    vi.stubEnv('CI', 'true');
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    expect(skipUnless('root', 'not root')).toBe(false);
    expect(skipUnless('the ipvlan driver', 'Unknown device type', 'skip')).toBe(true);
    expect(warn.mock.calls).toEqual([
      [`NOT SKIPPED under CI (these tests will fail) ${FILE}: needs root: not root`],
      [`SKIP ${FILE}: needs the ipvlan driver: Unknown device type`],
    ]);
  });
});
