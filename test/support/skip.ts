// Every skip in test/ goes through this module, so each one prints why
// (`SKIP <file>: needs <capability>: <what is missing>`) and none is silent.
// test/unit/skip-policy.test.ts fails on a skip that bypasses it.
import { spawnSync } from 'node:child_process';
import { relative } from 'node:path';
import { expect, type TestContext } from 'vitest';

/**
 * What CI does when a capability is missing: 'fail' (root and what scripts/ensure-system-deps.sh installs) or 'skip'
 * (kernel features).
 */
export type InCi = 'fail' | 'skip';

/** Whether this is CI's run (CI=true or CI=1; .ci/run sets it). */
export function inCi(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.CI === 'true' || env.CI === '1';
}

/** The line printed for a missing capability; `file` is relative to the repository root. */
export function skipLine(file: string, capability: string, missing: string, verdict: 'skip' | 'run'): string {
  const head = verdict === 'skip' ? 'SKIP' : 'NOT SKIPPED under CI (these tests will fail)';
  return `${head} ${file}: needs ${capability}: ${missing}`;
}

const printed = new Set<string>();

function say(line: string): void {
  // Once per file and reason: vitest isolates each file, so this set is per file.
  if (printed.has(line)) return;
  printed.add(line);
  console.warn(line);
}

function currentFile(): string {
  const path = expect.getState().testPath;
  return path === undefined ? '(unknown test file)' : relative(process.cwd(), path);
}

/**
 * For `describe.skipIf` / `it.skipIf`: true when `missing` (why `capability`
 * is absent; undefined when present) says to skip, after printing the SKIP
 * line once per file. Under CI with `ci: 'fail'` (the default) it prints and
 * returns false instead, so the tests run and fail loudly.
 */
export function skipUnless(capability: string, missing: string | undefined, ci: InCi = 'fail'): boolean {
  if (missing === undefined) return false;
  const skip = !(inCi() && ci === 'fail');
  say(skipLine(currentFile(), capability, missing, skip ? 'skip' : 'run'));
  return skip;
}

/**
 * Inside a test body, for a capability only the test can probe: prints like skipUnless, then skips the rest of the
 * test.
 */
export function skipTestUnless(
  ctx: TestContext,
  capability: string,
  missing: string | undefined,
  ci: InCi = 'fail',
): void {
  if (skipUnless(capability, missing, ci)) ctx.skip(`needs ${capability}: ${missing}`);
}

/**
 * Why `tools` cannot be used (the first one not on env's PATH, and `hint` on how to get it), or undefined when all are
 * there.
 */
export function missingTool(
  tools: readonly string[],
  hint: string,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  for (const tool of tools) {
    const found = spawnSync('sh', ['-c', 'command -v "$1"', 'sh', tool], { stdio: 'ignore', env });
    if (found.status !== 0) return `${tool} is not installed (${hint})`;
  }
  return undefined;
}

/** Why this process is not root (euid 0), or undefined when it is. */
export function notRoot(): string | undefined {
  const euid = process.geteuid?.();
  return euid === 0 ? undefined : `not root (euid ${euid ?? 'unknown'}): run the tests as root`;
}
