// `make build ARCH=arm64`: the linux-arm64 plugin, cross-built on
// this x86-64 machine from the npm registry's packages only (Bun's aarch64
// runtime, koffi's arm64 prebuilt addon): its ELF header and what it embeds
// (arm64.test.ts runs it under qemu-user). `scripts/build.mjs --entry`, which
// `make bench` uses for the runtime's floor. The build id, the same bytes from
// the same sources, and the plugin's refusals in a real build.
import { createHash } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run, runOk, skipIntegration } from './harness';
import { bunfsNames, elfHeader, EM_AARCH64 } from './harness/elf';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The first build fetches two ~50 MB packages. */
const BUILD_TIMEOUT_MS = 600_000;

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
      const dir = await mkdtemp(join(tmpdir(), 'announcer-entry-'));
      try {
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
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
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
      const dir = await mkdtemp(join(tmpdir(), 'announcer-build-id-'));
      try {
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
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
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
      const dir = await mkdtemp(join(tmpdir(), 'announcer-refusals-'));
      try {
        for (const p of ['src', 'scripts', 'package.json', 'package-lock.json'])
          await cp(join(ROOT, p), join(dir, p), { recursive: true });
        await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
        const victim = join(dir, 'src/cni/versions.ts');
        const original = await readFile(victim, 'utf8');
        const buildWith = async (line: string) => {
          await writeFile(victim, `${line}\n${original}`);
          return build(dir, join(dir, 'bin/announcer'));
        };
        const os = await buildWith("import { hostname } from 'node:os';\nexport const h = hostname;");
        expect(os.code).toBe(1);
        expect(os.stderr).toContain('src/cni/versions.ts imports node:os: product code uses only node:fs');
        const koffi = await buildWith("import koffi from 'koffi';\nexport const k = koffi;");
        expect(koffi.code).toBe(1);
        expect(koffi.stderr).toContain('src/cni/versions.ts loads koffi (import-statement)');
        const netlink = await buildWith("import * as netlink from 'netlink';\nexport const n = netlink;");
        expect(netlink.code).toBe(1);
        expect(netlink.stderr).toContain("src/cni/versions.ts imports 'netlink', which cannot run under Bun");
        const net = await buildWith("import { connect } from 'node:net';\nexport const c = connect;");
        expect(net.code).toBe(1);
        expect(net.stderr).toContain('src/cni/versions.ts imports node:net');
        // A module with a Bun twin is taken as its twin: the Node twins' node:net and node:child_process never reach
        // the bundle.
        const twin = await buildWith(
          "import { connectUnix } from '../sys/unix-stream';\nimport { spawnChild } from '../sys/spawn-child';\n" +
            'export const c = [connectUnix, spawnChild];',
        );
        expect(twin.code, twin.stderr).toBe(0);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
    BUILD_TIMEOUT_MS,
  );
});
