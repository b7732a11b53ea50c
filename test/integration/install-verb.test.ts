// `announcer install --dest DIR`, run as the built executable:
// byte-identical copy with mode 0755, idempotent, refusals, no temporary file
// left, a running old plugin replaced by rename (a copy in place would fail
// with ETXTBSY), and the syscalls that make it atomic and durable, read with
// strace: O_EXCL|O_NOFOLLOW temporary file, fchmod, fsync, rename, then fsync
// of the directory.
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ANNOUNCER, announcerCli, childEnv, missingTool, run, skipUnless, type RunResult } from './harness';

const ELF = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);
const STRACE_MISSING = missingTool(['strace'], 'scripts/ensure-system-deps.sh installs it', childEnv());

/** `announcer install ARGS…`. */
function install(...args: string[]): Promise<RunResult> {
  return announcerCli(['install', ...args]);
}

describe('announcer install --dest DIR, the built executable', () => {
  let base: string;
  let dest: string;
  beforeEach(async () => {
    const head = (await readFile(ANNOUNCER)).subarray(0, 4);
    if (!head.equals(ELF)) throw new Error(`${ANNOUNCER} is not an ELF executable: run make build`);
    base = await mkdtemp(join(tmpdir(), 'announcer-install-verb-'));
    dest = join(base, 'cni-bin');
    await mkdir(dest);
  });
  afterEach(() => rm(base, { recursive: true, force: true }));

  it('copies itself byte for byte, mode 0755, and leaves nothing else in DIR', async () => {
    const res = await install('--dest', dest);
    expect(res).toMatchObject({ code: 0, stdout: `installed ${dest}/announcer\n`, stderr: '' });
    expect(await readdir(dest)).toEqual(['announcer']);
    const st = await stat(join(dest, 'announcer'));
    expect(st.isFile()).toBe(true);
    expect(st.mode & 0o7777).toBe(0o755);
    expect((await readFile(join(dest, 'announcer'))).equals(await readFile(ANNOUNCER))).toBe(true);
  });

  it('does nothing, and says so, when DIR already holds the same bytes', async () => {
    await install('--dest', dest);
    const before = await stat(join(dest, 'announcer'));
    const res = await install(`--dest=${dest}`);
    expect(res).toMatchObject({ code: 0, stdout: `unchanged ${dest}/announcer (already identical)\n`, stderr: '' });
    const after = await stat(join(dest, 'announcer'));
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
    expect(await readdir(dest)).toEqual(['announcer']);
  });

  it('with --also-notices, also copies THIRD_PARTY_NOTICES from next to the executable (0644)', async () => {
    // A copy of the executable with its own notices beside it, so the test does not depend on bin/'s.
    const src = join(base, 'src');
    await mkdir(src);
    await copyFile(ANNOUNCER, join(src, 'announcer'));
    await run('chmod', ['0755', join(src, 'announcer')]);
    await writeFile(join(src, 'THIRD_PARTY_NOTICES'), 'notices\n');
    const res = await run(join(src, 'announcer'), ['install', '--dest', dest, '--also-notices']);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.stdout).toBe(`installed ${dest}/announcer\ninstalled ${dest}/THIRD_PARTY_NOTICES\n`);
    expect((await readdir(dest)).sort()).toEqual(['THIRD_PARTY_NOTICES', 'announcer']);
    expect(await readFile(join(dest, 'THIRD_PARTY_NOTICES'), 'utf8')).toBe('notices\n');
    expect((await stat(join(dest, 'THIRD_PARTY_NOTICES'))).mode & 0o7777).toBe(0o644);
  });

  const replacesPluginThatTitle =
    'replaces a plugin that is running by rename: the old process keeps its file, the name gets a new inode';
  it(replacesPluginThatTitle, async () => {
    // An old "plugin" that is executing: writing into its file in place would fail with ETXTBSY.
    const target = join(dest, 'announcer');
    await copyFile('/bin/sleep', target);
    const old = spawn(target, ['30'], { stdio: 'ignore' });
    try {
      const before = await stat(target);
      const res = await install('--dest', dest);
      expect(res).toMatchObject({ code: 0, stderr: '' });
      expect((await stat(target)).ino).not.toBe(before.ino);
      expect((await readFile(target)).equals(await readFile(ANNOUNCER))).toBe(true);
      expect(old.exitCode).toBeNull();
      expect(await readdir(dest)).toEqual(['announcer']);
    } finally {
      old.kill('SIGKILL');
    }
  });

  it('removes the temporary files of an install killed more than 10 minutes ago, and no younger one', async () => {
    const stale = '.announcer.tmp-0123456789ab';
    const young = '.announcer.tmp-fedcba987654';
    for (const name of [stale, young]) await writeFile(join(dest, name), 'half a plugin');
    const hourAgo = new Date(Date.now() - 3_600_000);
    await utimes(join(dest, stale), hourAgo, hourAgo);
    const res = await install('--dest', dest);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.stdout).toBe(`installed ${dest}/announcer\nremoved ${dest}/${stale} (left by an interrupted install)\n`);
    expect((await readdir(dest)).sort()).toEqual([young, 'announcer']);
  });

  it.each([
    ['missing', (b: string) => join(b, 'nope'), 'no such directory'],
    ['a regular file', (b: string) => join(b, 'file'), 'not a directory'],
  ])('refuses a DEST that is %s: one line on stderr, exit 1, nothing created', async (_what, destOf, problem) => {
    await writeFile(join(base, 'file'), 'x');
    const d = destOf(base);
    const res = await install('--dest', d);
    expect(res).toMatchObject({ code: 1, stdout: '', stderr: `announcer install: --dest ${d}: ${problem}\n` });
    expect((await readdir(base)).sort()).toEqual(['cni-bin', 'file']);
  });

  const failsInOneTitle =
    'fails in one line when the rename cannot happen (a directory named announcer), leaving no temporary file';
  it(failsInOneTitle, async () => {
    // The temporary file is written, then the rename over a directory fails.
    await mkdir(join(dest, 'announcer'));
    const res = await install('--dest', dest);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/^announcer install: .*(EISDIR|ENOTEMPTY|EEXIST|directory)/);
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(await readdir(dest)).toEqual(['announcer']);
  });

  it.skipIf(skipUnless('strace', STRACE_MISSING))(
    'makes the copy atomic and durable: O_EXCL|O_NOFOLLOW temporary file, fchmod 0755, fsync, rename, ' +
      'fsync of DIR (strace)',
    async () => {
      const trace = join(base, 'strace.log');
      const calls = 'trace=openat,fchmod,fsync,close,rename,renameat,renameat2';
      const res = await run('strace', ['-f', '-o', trace, '-e', calls, ANNOUNCER, 'install', '--dest', dest]);
      expect(res.code, res.stderr).toBe(0);
      // strace pads results with spaces: `fsync(6)          = 0`.
      const lines = (await readFile(trace, 'utf8'))
        .split('\n')
        .map((l) => l.replace(/^\d+\s+/, '').replace(/\s+/g, ' '));
      const esc = (t: string): string => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      // Each step is looked for after the one before: an fd number is reused, so `close(N)` may also
      // be an earlier file's.
      const from = (start: number, re: RegExp): number => {
        const i = lines.slice(start).findIndex((l) => re.test(l));
        return i < 0 ? -1 : start + i;
      };
      const tmpOpen = lines.find((l) => l.startsWith('openat(') && l.includes(`"${dest}/.announcer.tmp-`));
      expect(tmpOpen).toMatch(/O_WRONLY\|O_CREAT\|O_EXCL.*O_NOFOLLOW.*, 0600\) = \d+$/);
      const fd = /= (\d+)$/.exec(tmpOpen!)![1]!;
      const tmp = /"([^"]+)"/.exec(tmpOpen!)![1]!;
      expect(tmp.slice(dest.length + 1)).toMatch(/^\.announcer\.tmp-[0-9a-f]{12}$/);
      const patterns = [
        new RegExp(`^openat\\(.*"${esc(tmp)}"`),
        new RegExp(`^fchmod\\(${fd}, 0755\\) = 0`),
        new RegExp(`^fsync\\(${fd}\\) = 0`),
        new RegExp(`^close\\(${fd}\\) = 0`),
        new RegExp(`^rename(at2?)?\\(.*"${esc(tmp)}".*"${esc(dest)}/announcer".* = 0`),
        new RegExp(`^openat\\(.*"${esc(dest)}", O_RDONLY.*O_DIRECTORY`),
      ];
      // In this order, each after the one before.
      const steps: number[] = [];
      for (const re of patterns) {
        const previous = steps.length === 0 ? -1 : steps[steps.length - 1]!;
        steps.push(steps.length > 0 && previous < 0 ? -1 : from(previous + 1, re));
      }
      expect(
        steps.every((i) => i >= 0),
        lines.join('\n'),
      ).toBe(true);
      const dirFd = /= (\d+)$/.exec(lines[steps[5]!]!)![1]!;
      expect(lines.slice(steps[5]!).some((l) => l.startsWith(`fsync(${dirFd}) = 0`))).toBe(true);
      expect(await readdir(dest)).toEqual(['announcer']);
    },
  );
});
