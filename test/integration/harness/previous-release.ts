// The previous release's executable, built from its commit in this repository's history, for tests of
// compatibility across the change: an old shim with the new announcer, the new shim with the old announcer, and
// the old announcer's records and hand-over file taken up by the new one.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Scope } from './scope';

/** The last commit before the one-executor change (issue 25): the release in the field. */
export const PREVIOUS_RELEASE = '94bb87a';

const run = promisify(execFile);
const ROOT = new URL('../../..', import.meta.url).pathname.replace(/\/$/, '');

/** Whether this checkout holds the previous release's commit (a shallow clone does not). */
export async function hasPreviousRelease(): Promise<boolean> {
  try {
    await run('git', ['-C', ROOT, 'cat-file', '-e', `${PREVIOUS_RELEASE}^{commit}`]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Builds the previous release's executable from its sources (git archive), with this checkout's node_modules (the
 * same pinned Bun and koffi), into a temp dir removed at scope close; returns its path.
 */
export async function buildPreviousRelease(scope: Scope): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'announcer-previous-'));
  scope.defer(() => rm(dir, { recursive: true, force: true }), `previous release dir ${dir}`);
  const src = join(dir, 'src');
  await run('mkdir', [src]);
  await run('sh', ['-c', 'git -C "$1" archive "$2" | tar -x -C "$3"', 'sh', ROOT, PREVIOUS_RELEASE, src]);
  await symlink(join(ROOT, 'node_modules'), join(src, 'node_modules'));
  const out = join(dir, 'announcer');
  const bun = join(ROOT, 'node_modules', '.bin', 'bun');
  await run('nice', ['-n', '10', bun, join(src, 'scripts', 'build.mjs'), '--arch=x64', `--out=${out}`], {
    cwd: src,
    timeout: 120_000,
  });
  return out;
}
