// `make build ARCH=arm64`: the linux-arm64 plugin, cross-built on
// this x86-64 machine from the npm registry's packages only (Bun's aarch64
// runtime, koffi's arm64 prebuilt addon): its ELF header and what it embeds
// (arm64.test.ts runs it under qemu-user). And `scripts/build.mjs --entry`, which
// `make bench` uses for the runtime's floor.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
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
      const res = await runOk('make', ['-C', ROOT, '--no-print-directory', 'build', 'ARCH=arm64'], { timeoutMs: BUILD_TIMEOUT_MS });
      expect(res.stdout + res.stderr).not.toMatch(/bun-linux-x64/);
      const bin = await readFile(join(ROOT, 'bin/announcer-arm64'));
      expect(elfHeader(bin)).toEqual({ type: 'executable', machine: EM_AARCH64, interpreter: '/lib/ld-linux-aarch64.so.1' });
      const koffi = JSON.parse(await readFile(join(ROOT, 'node_modules/koffi/package.json'), 'utf8')).version as string;
      // (Never hand the 100 MB binary itself to expect: a failure message would try to print it.)
      const embedded = bunfsNames(bin.toString('latin1'));
      expect(embedded).toContainEqual(expect.stringMatching(new RegExp(`^/\\$bunfs/root/koffi-${koffi.replaceAll('.', '\\.')}-linux-arm64-\\w+\\.addon$`)));
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
    'compiles another entry with the same runtime, without koffi’s addon: an empty program that runs in an empty environment',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'announcer-entry-'));
      try {
        const out = join(dir, 'empty-program');
        await runOk(join(ROOT, 'node_modules/.bin/bun'), [join(ROOT, 'scripts/build.mjs'), '--entry=scripts/bench/empty-entry.ts', `--out=${out}`], {
          timeoutMs: BUILD_TIMEOUT_MS,
        });
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
