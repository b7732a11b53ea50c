// `make build ARCH=arm64`: the linux-arm64 plugin, cross-built on
// this x86-64 machine from the npm registry's packages only (Bun's aarch64
// runtime, koffi's arm64 prebuilt addon): its ELF header and what it embeds
// (arm64.test.ts runs it under qemu-user). `scripts/build.mjs --entry`, which
// `make bench` uses for the runtime's floor. The build id, the same bytes from
// the same sources, and the plugin's refusals in a real build.
import { createHash } from 'node:crypto';
import { cp, readFile, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run, runOk, scopePerTest, skipIntegration, tempDir } from './harness';
import { bunfsNames, elfHeader, EM_AARCH64 } from './harness/elf';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The first build fetches two ~50 MB packages. */
const BUILD_TIMEOUT_MS = 600_000;
const scope = scopePerTest();

describe.skipIf(skipIntegration())('make build ARCH=arm64', () => {
  it(
    'cross-builds bin/announcer-arm64: an AArch64 ELF executable holding koffi’s arm64 addon as an asset',
    async () => {
      const res = await runOk('make', ['-C', ROOT, '--no-print-directory', 'build', 'ARCH=arm64'], {
        timeoutMs: BUILD_TIMEOUT_MS,
      });
      expect(res.stdout + res.stderr).not.toMatch(/bun-linux-x64/);
      const bin = await readFile(join(ROOT, 'bin/announcer-arm64'));
      expect(elfHeader(bin)).toEqual({
        type: 'executable',
        machine: EM_AARCH64,
        interpreter: '/lib/ld-linux-aarch64.so.1',
      });
      const koffi = JSON.parse(await readFile(join(ROOT, 'node_modules/koffi/package.json'), 'utf8')).version as string;
      // (Never hand the 100 MB binary itself to expect: a failure message would try to print it.)
      const embedded = bunfsNames(bin.toString('latin1'));
      expect(embedded).toContainEqual(
        expect.stringMatching(
          new RegExp(`^/\\$bunfs/root/koffi-${koffi.replaceAll('.', '\\.')}-linux-arm64-\\w+\\.addon$`),
        ),
      );
      expect(embedded.filter((p) => p.endsWith('.node'))).toEqual([]);
      // The embedded addon is koffi's AArch64 build, byte for byte.
      const addon = await readFile(join(ROOT, 'node_modules/.cache/cni-announcer', `koffi-${koffi}-linux-arm64.addon`));
      expect(elfHeader(addon)).toMatchObject({ type: 'shared object', machine: EM_AARCH64 });
      expect(bin.includes(addon), 'the addon’s bytes in the binary').toBe(true);
    },
    BUILD_TIMEOUT_MS,
  );
});

describe.skipIf(skipIntegration())('scripts/build.mjs --entry', () => {
  it(
    'compiles another entry with the same runtime, without koffi’s addon: an empty program that runs in ' +
      'an empty environment',
    async () => {
      const dir = await tempDir(scope(), 'announcer-entry-');
      const out = join(dir, 'empty-program');
      await runOk(
        join(ROOT, 'node_modules/.bin/bun'),
        [join(ROOT, 'scripts/build.mjs'), '--entry=scripts/bench/empty-entry.ts', `--out=${out}`],
        {
          timeoutMs: BUILD_TIMEOUT_MS,
        },
      );
      const bin = await readFile(out);
      expect(elfHeader(bin)).toMatchObject({ type: 'executable' });
      expect(bunfsNames(bin.toString('latin1')).filter((p) => p.includes('koffi'))).toEqual([]);
      const res = await run(out, [], { inheritEnv: false });
      expect([res.code, res.stdout, res.stderr]).toEqual([0, '', '']);
    },
    BUILD_TIMEOUT_MS,
  );
});

const BUN = join(ROOT, 'node_modules/.bin/bun');
const sha256 = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');

/** Builds the checkout `root` to `out` with `args`; the build's own output line and status. */
async function build(root: string, out: string, args: string[] = []) {
  return run(BUN, [join(root, 'scripts/build.mjs'), `--out=${out}`, ...args], { timeoutMs: BUILD_TIMEOUT_MS });
}

/** The `Build:` line of `announcer --version`, run in an empty environment. */
async function versionId(bin: string): Promise<string | undefined> {
  const res = await runOk(bin, ['--version'], { inheritEnv: false });
  return /^Build: (.+)$/m.exec(res.stdout)?.[1];
}

describe.skipIf(skipIntegration())('scripts/build.mjs: the build id', () => {
  it(
    'gives two builds of the same sources the same id and the same bytes; --version prints it; ' +
      '--build-id overrides it; koffi loads',
    async () => {
      const dir = await tempDir(scope(), 'announcer-build-id-');
      // The same name in two directories: Bun bakes the output's name into the binary.
      const [a, b, other] = [join(dir, 'a/announcer'), join(dir, 'b/announcer'), join(dir, 'c/announcer')];
      const first = await build(ROOT, a);
      const second = await build(ROOT, b);
      const overridden = await build(ROOT, other, ['--build-id=upgrade-2.test']);
      for (const res of [first, second, overridden]) expect(res.code, res.stderr).toBe(0);
      const id = /, build ([0-9a-f]{16}),/.exec(first.stdout)?.[1];
      expect(id, first.stdout).toBeDefined();
      expect(second.stdout).toContain(`, build ${id},`);
      expect(await versionId(a)).toBe(id);
      expect(await versionId(b)).toBe(id);
      expect(await sha256(a)).toBe(await sha256(b));
      expect(await versionId(other)).toBe('upgrade-2.test');
      expect(await sha256(other)).not.toBe(await sha256(a));
      // The binaries load koffi from what they carry: `status` calls libc through it.
      for (const bin of [a, other]) {
        const res = await run(bin, ['status', '--json', '--state-dir', join(dir, 'state')], { inheritEnv: false });
        expect([res.code, res.stderr]).toEqual([0, '']);
      }
      const bad = await build(ROOT, join(dir, 'd/announcer'), ['--build-id=no spaces']);
      expect([bad.code, bad.stderr.trim()]).toEqual([
        1,
        'build: malformed --build-id=no spaces: /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/',
      ]);
    },
    BUILD_TIMEOUT_MS,
  );
});

describe.skipIf(skipIntegration())("scripts/build.mjs: the plugin's refusals, in a real build", () => {
  it(
    'fails on a node:* builtin other than node:fs and on koffi loaded anywhere but src/sys/libc.ts; ' +
      'builds the modules with a Bun twin (unix-stream, spawn-child) as their twins',
    async () => {
      // A copy of the checkout (node_modules linked): its sources are changed one way at a time.
      const dir = await tempDir(scope(), 'announcer-refusals-');
      for (const p of ['src', 'scripts', 'package.json', 'package-lock.json'])
        await cp(join(ROOT, p), join(dir, p), { recursive: true });
      await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
      const victim = join(dir, 'src/cni/versions.ts');
      const original = await readFile(victim, 'utf8');
      const buildWith = async (line: string) => {
        await writeFile(victim, `${line}\n${original}`);
        return build(dir, join(dir, 'bin/announcer'));
      };
      for (const [line, refusal] of [
        [
          "import { hostname } from 'node:os';\nexport const h = hostname;",
          'imports node:os: product code uses only node:fs',
        ],
        ["import koffi from 'koffi';\nexport const k = koffi;", 'loads koffi (import-statement)'],
        [
          "import * as netlink from 'netlink';\nexport const n = netlink;",
          "imports 'netlink', which cannot run under Bun",
        ],
        ["import { connect } from 'node:net';\nexport const c = connect;", 'imports node:net'],
      ]) {
        const res = await buildWith(line!);
        expect([res.code, res.stderr], line).toEqual([1, expect.stringContaining(`src/cni/versions.ts ${refusal}`)]);
      }
      // A module with a Bun twin is taken as its twin: the Node twins' node:net and node:child_process never reach
      // the bundle.
      const twin = await buildWith(
        "import { connectUnix } from '../sys/unix-stream';\nimport { spawnChild } from '../sys/spawn-child';\n" +
          'export const c = [connectUnix, spawnChild];',
      );
      expect(twin.code, twin.stderr).toBe(0);
    },
    BUILD_TIMEOUT_MS,
  );
});
