// Builds bin/announcer: one self-contained ELF executable (`bun build --compile`)
// holding the Bun runtime, the bundled plugin and koffi's native addon. Run it
// with the pinned Bun (`make build` does):
//
//   node_modules/.bin/bun scripts/build.mjs [--arch=x64|arm64] [--cpu=baseline|modern] [--out=FILE]
//                                           [--[no-]bytecode] [--[no-]minify] [--entry=FILE] [--build-id=ID]
//
// --entry builds another entry (default src/main.ts) with the same runtime and
// options but no koffi addon: `make bench` builds an empty one, the runtime's
// own floor of time and memory.
//
// Every build has an id (src/about.ts, printed by `announcer --version`): the first 16 hex digits
// of sha256 over what the build reads (scripts/build/build-id.ts) and its settings, so the same sources
// give the same id and any change that could change the bytes changes it. --build-id=ID writes ID in
// instead (tests of an upgrade build a second binary from the same sources).
//
// - x64 builds on Bun's baseline runtime (no AVX2 needed; `--cpu=modern` takes
//   the AVX2 one, which measured no faster) and with JavaScriptCore bytecode,
//   which cuts VERSION's CPU time by a sixth to a fifth. Whitespace and syntax are
//   minified (ADD: 2 ms less CPU, 1.3 ms sooner done); identifiers are not, so
//   stack traces in logs keep their function names.
// - koffi's addon travels as plain bytes (an embedded asset, not a `.node`
//   module). src/native/embedded-koffi.ts reads it whole and dlopen()s it from
//   an anonymous file (src/native/load-addon.ts); the plugin (scripts/build/plugin.ts)
//   points `require('koffi')` there. Bun's own mechanism for embedded addons
//   (extraction to /tmp) is never used. The bundle takes koffi's API from the
//   addon itself: koffi's JS entry (its search of node_modules paths, its
//   deprecation shims) is not bundled.
// - The Bun runtime and, for a cross build, koffi's prebuilt addon come only
//   from the npm registry's packages, fetched with `npm pack` into
//   node_modules/.cache/cni-announcer and checked against pinned sha512 sums.
// - The same sources give the same bytes. The output is written beside its
//   target and renamed over it: a runtime never execs half a file.
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BuildError, fail } from './build/build-error.mjs';
import { BUILD_ID_PATTERN, buildId, buildInputs } from './build/build-id.ts';
import { builtinRefusals, embedPlugin } from './build/plugin.ts';
import { registryFile as fetchRegistryFile } from './build/registry.mjs';

const root = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
const cacheDir = join(root, 'node_modules', '.cache', 'cni-announcer');
const registryFile = (name, version, inner) => fetchRegistryFile({ root, cacheDir }, name, version, inner);

/** The executable's JIT tier-up threshold scale (Bun's compile.jitPolicy; 1 is normal). */
const JIT_POLICY = 1000;

function readJson(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

function packageVersion(name) {
  return readJson(join(root, 'node_modules', name, 'package.json')).version;
}

function parseArgs(argv) {
  const args = {
    arch: 'x64',
    cpu: 'baseline',
    bytecode: undefined,
    minify: true,
    out: undefined,
    entry: 'src/main.ts',
    'build-id': undefined,
  };
  for (const a of argv) {
    const m = /^--(no-)?([a-z-]+)(?:=(.+))?$/.exec(a);
    if (!m || !(m[2] in args)) fail(`unknown argument ${a}`);
    const flag = m[2] === 'bytecode' || m[2] === 'minify';
    if (flag ? m[3] !== undefined : m[1] !== undefined || m[3] === undefined) fail(`malformed argument ${a}`);
    args[m[2]] = flag ? m[1] === undefined : m[3];
  }
  // JSC bytecode is made by the Bun running the build and is not portable to another architecture.
  if (args.arch !== 'x64' && args.bytecode) fail('--bytecode needs a build on the target architecture');
  args.bytecode ??= args.arch === 'x64';
  if (args['build-id'] !== undefined && !BUILD_ID_PATTERN.test(args['build-id']))
    fail(`malformed --build-id=${args['build-id']}: ${BUILD_ID_PATTERN}`);
  return args;
}

/** What to build for: Bun's compile target, the Bun executable to embed, koffi's addon. */
function buildTarget({ arch, cpu }, versions) {
  if (arch === 'arm64') {
    return {
      bunTarget: 'bun-linux-arm64',
      executable: registryFile('@oven/bun-linux-aarch64', versions.bun, 'bin/bun'),
      koffiAddon: registryFile('@koromix/koffi-linux-arm64', versions.koffi, 'linux_arm64/koffi.node'),
    };
  }
  if (arch !== 'x64') fail(`unsupported --arch=${arch} (x64 or arm64)`);
  // x64 builds run here, so koffi's addon is the one npm installed.
  if (process.platform !== 'linux' || process.arch !== 'x64') fail('x64 builds run on linux-x64 only');
  const koffiAddon = join(root, 'node_modules', '@koromix', 'koffi-linux-x64', 'linux_x64', 'koffi.node');
  if (cpu === 'baseline') {
    return {
      bunTarget: 'bun-linux-x64-baseline',
      executable: registryFile('@oven/bun-linux-x64-baseline', versions.bun, 'bin/bun'),
      koffiAddon,
    };
  }
  // The installed Bun: the `bun` package links @oven/bun-linux-x64's binary (AVX2) there.
  if (cpu === 'modern') return { bunTarget: 'bun-linux-x64-modern', executable: process.execPath, koffiAddon };
  return fail(`unsupported --cpu=${cpu} (baseline or modern)`);
}

/**
 * The npm packages the build took code from (koffi's addon asset and the plugin's virtual modules left out); the
 * metafile's paths are relative to the working directory.
 */
function bundledPackages(metafile, addonAsset) {
  return new Set(
    Object.keys(metafile?.inputs ?? {})
      .filter(
        (p) =>
          !p.startsWith('cni-announcer:') &&
          (addonAsset === undefined || realpathSync(resolve(p)) !== realpathSync(addonAsset)),
      )
      .map((p) => /(?:^|[\\/])node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(p)?.[1])
      .filter(Boolean),
  );
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const manifest = readJson(join(root, 'package.json'));
  const versions = { announcer: manifest.version, bun: packageVersion('bun'), koffi: packageVersion('koffi') };
  if (typeof Bun === 'undefined' || Bun.version !== versions.bun)
    fail(`run this with the pinned Bun ${versions.bun}: node_modules/.bin/bun scripts/build.mjs`);
  mkdirSync(cacheDir, { recursive: true });
  const target = buildTarget(args, versions);
  const entry = resolve(root, args.entry);
  // Another entry (the bench's empty program) gets the same runtime and options, not the addon.
  const plugin = entry === join(root, 'src/main.ts');
  // A neutral name: these bytes are an asset to read, never a module for Bun to load.
  const addonAsset = join(cacheDir, `koffi-${versions.koffi}-linux-${args.arch}.addon`);
  if (plugin) copyFileSync(target.koffiAddon, addonAsset);

  const outfile = resolve(root, args.out ?? (args.arch === 'x64' ? 'bin/announcer' : `bin/announcer-${args.arch}`));
  const id = args['build-id'] ?? idOf(args, target, versions, entry, outfile, plugin ? addonAsset : undefined);
  mkdirSync(dirname(outfile), { recursive: true });
  // Built under the target's own name (Bun bakes it into the binary as /$bunfs/root/NAME) in a
  // private directory beside it, then renamed over it.
  const tmpdir = join(dirname(outfile), `.${basename(outfile)}.build-${process.pid}`);
  const tmpfile = join(tmpdir, basename(outfile));
  rmSync(tmpdir, { recursive: true, force: true });
  mkdirSync(tmpdir, { mode: 0o700 });
  try {
    await compile(
      args,
      target,
      entry,
      plugin ? addonAsset : undefined,
      { id, koffiVersion: versions.koffi },
      tmpfile,
      manifest,
    );
    chmodSync(tmpfile, 0o755);
    renameSync(tmpfile, outfile);
  } finally {
    rmSync(tmpdir, { recursive: true, force: true });
  }
  const what = plugin ? `announcer ${versions.announcer}` : relative(root, entry);
  console.log(
    `built ${relative(process.cwd(), outfile)}: ${what}, build ${id}, ${target.bunTarget}, ` +
      `Bun ${versions.bun}${plugin ? `, koffi ${versions.koffi}` : ''}`,
  );
}

/** The build's id (scripts/build/build-id.ts): what it reads, and every setting that reaches the bytes. */
function idOf(args, target, versions, entry, outfile, addonAsset) {
  const addon = addonAsset === undefined ? '' : createHash('sha256').update(readFileSync(addonAsset)).digest('hex');
  const { arch, cpu, bytecode, minify } = args;
  const [bun, koffi, name] = [versions.bun, versions.koffi, basename(outfile)];
  return buildId(buildInputs(root, entry), {
    bun,
    bunTarget: target.bunTarget,
    arch,
    cpu,
    bytecode,
    minify,
    entry: relative(root, entry),
    name,
    koffi,
    addon,
  });
}

/**
 * One `bun build --compile` of `entry` to `outfile`, embedding the file `addonAsset` as koffi's addon
 * (undefined: `entry` needs none), with `defines.id` written in as the build's id.
 */
async function compile(args, target, entry, addonAsset, defines, outfile, manifest) {
  const used = { addon: false };
  const result = await Bun.build({
    entrypoints: [entry],
    target: 'bun',
    // One chunk per group of modules that load together: a run parses and links only what its command
    // imports (VERSION: 45.3 -> 38.9 ms, CPU 48 -> 38 ms; ADD count 1: CPU 58 -> 53 ms, 20 interleaved
    // runs against one cjs file). The bytecode covers every chunk.
    format: 'esm',
    splitting: true,
    bytecode: args.bytecode,
    minify: args.minify && { whitespace: true, syntax: true, identifiers: false },
    metafile: true,
    // src/about.ts and src/native/embedded-koffi.ts declare these.
    define: {
      __ANNOUNCER_BUILD_ID__: JSON.stringify(defines.id),
      __KOFFI_VERSION__: JSON.stringify(defines.koffiVersion),
    },
    plugins: addonAsset ? [embedPlugin(root, addonAsset, used)] : [],
    compile: {
      target: target.bunTarget,
      executablePath: target.executable,
      outfile,
      // The plugin runs as root in the runtime's working directory: no file found there may change what runs.
      autoloadDotenv: false,
      autoloadBunfig: false,
      autoloadTsconfig: false,
      autoloadPackageJson: false,
      // A plugin run lives ~100 ms: JIT tiers would compile code that then runs once. Scaling the
      // tier-up thresholds keeps it in the interpreter: ADD measured 3 MiB less peak RSS and ~10 ms
      // less CPU, no slower. The background announcer, which mostly waits in poll(2), does not care.
      jitPolicy: JIT_POLICY,
    },
  });
  if (!result.success) fail(result.logs.join('\n'));
  if (addonAsset && !used.addon) fail('the bundle does not load koffi through src/sys/libc.ts');
  const refusals = builtinRefusals(result.metafile, root, process.cwd());
  if (refusals.length) fail(refusals.join('\n'));
  const packages = bundledPackages(result.metafile, addonAsset);
  const strays = [...packages].filter((p) => !(p in (manifest.dependencies ?? {})));
  // THIRD_PARTY_NOTICES covers the dependencies in package.json.
  if (strays.length) fail(`bundled packages that are not dependencies in package.json: ${strays.join(', ')}`);
}

try {
  await main();
} catch (err) {
  const messages =
    err instanceof AggregateError ? err.errors.map((e) => e?.message ?? String(e)) : [err?.message ?? String(err)];
  console.error(`build: ${messages.join('\nbuild: ')}`);
  if (!(err instanceof BuildError || err instanceof AggregateError)) console.error(err);
  process.exit(1);
}
