// Builds bin/announcer: one self-contained ELF executable (`bun build --compile`)
// holding the Bun runtime, the bundled plugin and koffi's native addon. Run it
// with the pinned Bun (`make build` does):
//
//   node_modules/.bin/bun scripts/build.mjs [--arch=x64|arm64] [--cpu=baseline|modern] [--out=FILE] [--[no-]bytecode] [--[no-]minify]
//                                           [--entry=FILE]
//
// --entry builds another entry (default src/main.ts) with the same runtime and
// options but no koffi addon: `make bench` builds an empty one, the runtime's
// own floor of time and memory.
//
// - x64 builds on Bun's baseline runtime (no AVX2 needed; `--cpu=modern` takes
//   the AVX2 one, which measured no faster) and with JavaScriptCore bytecode,
//   which cuts VERSION's CPU time by a sixth to a fifth. Whitespace and syntax are
//   minified (ADD: 2 ms less CPU, 1.3 ms sooner done); identifiers are not, so
//   stack traces in logs keep their function names.
// - koffi's addon travels as plain bytes (an embedded asset, not a `.node`
//   module) and is dlopen()ed from an anonymous file by src/native/load-addon.ts.
//   Bun's own mechanism for embedded addons (extraction to /tmp) is never used.
//   The bundle takes koffi's API from the addon itself: koffi's JS entry (its
//   search of node_modules paths, its deprecation shims) is not bundled.
// - The Bun runtime and, for a cross build, koffi's prebuilt addon come only
//   from the npm registry's packages, fetched with `npm pack` into
//   node_modules/.cache/cni-announcer and checked against pinned sha512 sums.
// - The same sources give the same bytes. The output is written beside its
//   target and renamed over it: a runtime never execs half a file.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
const cacheDir = join(root, 'node_modules', '.cache', 'cni-announcer');

/**
 * sha512 of the registry packages that package-lock.json does not list (it
 * holds the others). A new pinned Bun needs its line: `npm pack NAME@VERSION --json` prints it.
 */
const PINNED_INTEGRITY = {
  '@oven/bun-linux-x64-baseline@1.4.5': 'sha512-s8yMwYcFnnrA178gji0gZbkE2WVDej/Ti1x770oPfihxyRxSMNhGhiAQNXV53aDeraZxksdvKV/RAdQBCd0qPA==',
};

/** The executable's JIT tier-up threshold scale (Bun's compile.jitPolicy; 1 is normal). */
const JIT_POLICY = 1000;

class BuildError extends Error {}

function fail(message) {
  throw new BuildError(message);
}

function readJson(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

function packageVersion(name) {
  return readJson(join(root, 'node_modules', name, 'package.json')).version;
}

function parseArgs(argv) {
  const args = { arch: 'x64', cpu: 'baseline', bytecode: undefined, minify: true, out: undefined, entry: 'src/main.ts' };
  for (const a of argv) {
    const m = /^--(no-)?([a-z]+)(?:=(.+))?$/.exec(a);
    if (!m || !(m[2] in args)) fail(`unknown argument ${a}`);
    const flag = m[2] === 'bytecode' || m[2] === 'minify';
    if (flag ? m[3] !== undefined : m[1] !== undefined || m[3] === undefined) fail(`malformed argument ${a}`);
    args[m[2]] = flag ? m[1] === undefined : m[3];
  }
  // JSC bytecode is made by the Bun running the build and is not portable to another architecture.
  if (args.arch !== 'x64' && args.bytecode) fail('--bytecode needs a build on the target architecture');
  args.bytecode ??= args.arch === 'x64';
  return args;
}

/** The sha512 that package-lock.json records for `name@version`, else the pinned one. */
function expectedIntegrity(name, version) {
  const locked = readJson(join(root, 'package-lock.json')).packages?.[`node_modules/${name}`];
  if (locked?.version === version && locked.integrity) return locked.integrity;
  return PINNED_INTEGRITY[`${name}@${version}`] ?? fail(`no pinned sha512 for ${name}@${version}: add it to PINNED_INTEGRITY in scripts/build.mjs`);
}

/**
 * The file `inner` of registry package `name@version`, fetched once with
 * `npm pack` into the cache; the tarball is checked against its sha512 before
 * every extraction.
 */
function registryFile(name, version, inner) {
  const integrity = expectedIntegrity(name, version);
  const stem = `${name.replace(/^@/, '').replace('/', '-')}-${version}`;
  const tgz = join(cacheDir, `${stem}.tgz`);
  const sri = () => `sha512-${createHash('sha512').update(readFileSync(tgz)).digest('base64')}`;
  const dir = join(cacheDir, stem);
  const out = join(dir, inner);
  const stamp = join(dir, '.sha512');
  if (existsSync(out) && existsSync(stamp) && readFileSync(stamp, 'utf8') === integrity) return out;
  if (!existsSync(tgz) || sri() !== integrity) {
    console.log(`build: npm pack ${name}@${version}`);
    execFileSync('npm', ['pack', `${name}@${version}`, '--pack-destination', cacheDir, '--silent'], { stdio: ['ignore', 'ignore', 'inherit'] });
    if (sri() !== integrity) fail(`${name}@${version}: the registry's tarball does not match sha512 ${integrity}`);
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync('tar', ['-xzf', tgz, '-C', dir, '--strip-components=1', `package/${inner}`]);
  writeFileSync(stamp, integrity);
  return out;
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
    return { bunTarget: 'bun-linux-x64-baseline', executable: registryFile('@oven/bun-linux-x64-baseline', versions.bun, 'bin/bun'), koffiAddon };
  }
  // The installed Bun: the `bun` package links @oven/bun-linux-x64's binary (AVX2) there.
  if (cpu === 'modern') return { bunTarget: 'bun-linux-x64-modern', executable: process.execPath, koffiAddon };
  return fail(`unsupported --cpu=${cpu} (baseline or modern)`);
}

/**
 * The Bun plugin that embeds koffi's addon as bytes and refuses every other native module.
 * `addon`: the addon's file, its offset in the output (as digits) and koffi's version. `used.addon`
 * turns true once the bundle takes koffi from the embedded addon.
 */
function embedPlugin({ path: addonAsset, offset: addonOffset, koffiVersion }, used) {
  return {
    name: 'cni-announcer',
    setup(b) {
      // koffi's JS entry finds its addon in node_modules (a require of @koromix/koffi-<platform>, then a
      // search of paths baked in at build time) and wraps it in deprecation shims. The bundle takes the
      // addon's own exports instead, loaded from the embedded bytes: none of koffi's JS is bundled, no
      // build-machine path is left to look in, and ADD skips 1-2 ms of module set-up.
      b.onResolve({ filter: /^koffi$/ }, (a) => {
        if (a.importer === join(root, 'src/sys/koffi.ts') && a.kind === 'require-call') return { path: 'koffi-addon', namespace: 'cni-announcer' };
        // Loading koffi dlopen()s its addon: only loadKoffi() in src/sys/koffi.ts may, on first use.
        return fail(`${relative(root, a.importer)} loads koffi (${a.kind}): take it from loadKoffi() in src/sys/koffi.ts`);
      });
      b.onLoad({ filter: /^koffi-addon$/, namespace: 'cni-announcer' }, () => {
        used.addon = true;
        return {
          loader: 'js',
          resolveDir: root,
          contents: [
            `import { readFileSync } from 'node:fs';`,
            `import addonFile from ${JSON.stringify(addonAsset)} with { type: 'file' };`,
            `import { addonInExecutable, loadAddon } from ${JSON.stringify(join(root, 'src/native/load-addon.ts'))};`,
            // Where the addon's bytes lie in this very executable (see main()); readFileSync of the
            // embedded asset is the fallback, should the file have been changed since.
            `const OFFSET = ${JSON.stringify(addonOffset)};`,
            `const addon = loadAddon('koffi', addonInExecutable(Number(OFFSET), ${statSync(addonAsset).size}, () => readFileSync(addonFile)));`,
            // What koffi's own entry checks, with the same words.
            `if (addon.version !== ${JSON.stringify(koffiVersion)}) throw new Error('Mismatched native Koffi modules');`,
            // koffi's entry exports the addon as its default export, as loadKoffi() takes it.
            `export default addon;`,
          ].join('\n'),
        };
      });
      // Bun's node:* builtins other than node:fs are written in JS, and the first one a run loads
      // costs it ~6 MiB and milliseconds (src/path.ts and src/sys/errno.ts stand in for the two we used).
      b.onResolve({ filter: /^(node:)?(assert|buffer|child_process|crypto|events|module|net|os|path|stream|url|util)(\/.*)?$/ }, (a) => {
        // The shim starts the announcer with node:child_process, loaded only then (no FFI on its path).
        if (a.importer === join(root, 'src/sys/spawn-child.ts') && /^(node:)?child_process$/.test(a.path)) return undefined;
        if (a.importer.startsWith(join(root, 'src'))) fail(`${relative(root, a.importer)} imports ${a.path}: product code uses only node:fs (see src/path.ts)`);
        return undefined;
      });
      // A module with a Bun twin (src/sys/X.bun.ts beside src/sys/X.ts) is left out of the binary: the
      // runtime's selector loads the twin, and a run that picked the Node one would fail loudly.
      b.onResolve({ filter: /^\.\/[\w-]+$/ }, (a) => {
        if (!a.importer.startsWith(join(root, 'src')) || !existsSync(join(dirname(a.importer), `${a.path}.bun.ts`))) return undefined;
        return { path: `node-twin:${relative(root, join(dirname(a.importer), a.path))}`, namespace: 'cni-announcer' };
      });
      b.onLoad({ filter: /^node-twin:/, namespace: 'cni-announcer' }, (a) => ({
        loader: 'js',
        contents: `throw new Error(${JSON.stringify(`${a.path.slice('node-twin:'.length)}.ts is the Node twin, not in the Bun build: load its .bun.ts`)});`,
      }));
      // Bun would embed any other native module itself and extract it to /tmp at run time.
      b.onResolve({ filter: /\.node$/ }, (a) => fail(`${relative(root, a.importer)} requires the native module ${a.path}: only koffi's addon may be embedded`));
      // The netlink package's socket addon needs libuv's uv_poll_init, which Bun lacks.
      b.onResolve({ filter: /^netlink(\/|$)/ }, (a) => fail(`${relative(root, a.importer)} imports '${a.path}', which cannot run under Bun: use src/sys/rtnl.ts`));
    },
  };
}

/** The npm packages the build took code from (koffi's addon asset and our virtual modules left out). */
function bundledPackages(metafile, addonAsset) {
  return new Set(
    Object.keys(metafile?.inputs ?? {})
      .filter((p) => !p.startsWith('cni-announcer:') && (addonAsset === undefined || realpathSync(resolve(root, p)) !== realpathSync(addonAsset)))
      .map((p) => /(?:^|[\\/])node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(p)?.[1])
      .filter(Boolean),
  );
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const manifest = readJson(join(root, 'package.json'));
  const versions = { announcer: manifest.version, bun: packageVersion('bun'), koffi: packageVersion('koffi') };
  if (typeof Bun === 'undefined' || Bun.version !== versions.bun) fail(`run this with the pinned Bun ${versions.bun}: node_modules/.bin/bun scripts/build.mjs`);
  mkdirSync(cacheDir, { recursive: true });
  const target = buildTarget(args, versions);
  const entry = resolve(root, args.entry);
  // Another entry (the bench's empty program) gets the same runtime and options, not the addon.
  const plugin = entry === join(root, 'src/main.ts');
  // A neutral name: these bytes are an asset to read, never a module for Bun to load.
  const addonAsset = join(cacheDir, `koffi-${versions.koffi}-linux-${args.arch}.addon`);
  if (plugin) copyFileSync(target.koffiAddon, addonAsset);

  const outfile = resolve(root, args.out ?? (args.arch === 'x64' ? 'bin/announcer' : `bin/announcer-${args.arch}`));
  mkdirSync(dirname(outfile), { recursive: true });
  // Built under the target's own name (Bun bakes it into the binary as /$bunfs/root/NAME) in a
  // private directory beside it, then renamed over it.
  const tmpdir = join(dirname(outfile), `.${basename(outfile)}.build-${process.pid}`);
  const tmpfile = join(tmpdir, basename(outfile));
  rmSync(tmpdir, { recursive: true, force: true });
  mkdirSync(tmpdir, { mode: 0o700 });
  // The addon is copied out of the executable at run time (src/native/load-addon.ts): reading the embedded
  // asset whole cost ADD 5-7 ms. Its offset in the output is known only once the output exists, so the
  // first pass writes a placeholder of the offset's width, and the second the offset: the same length, so
  // the same layout, which is checked.
  const compileWith = (addonOffset) =>
    compile(args, target, entry, plugin ? { path: addonAsset, offset: addonOffset, koffiVersion: versions.koffi } : undefined, tmpfile, manifest);
  const offsetIn = (file) => {
    const addon = readFileSync(addonAsset);
    const bytes = readFileSync(file);
    const at = bytes.indexOf(addon);
    if (at < 0 || bytes.indexOf(addon, at + 1) >= 0) fail(`${relative(root, file)}: koffi's addon is not in it exactly once`);
    return at;
  };
  try {
    await compileWith('0'.repeat(OFFSET_DIGITS));
    if (plugin) {
      const offset = offsetIn(tmpfile);
      await compileWith(String(offset).padStart(OFFSET_DIGITS, '0'));
      if (offsetIn(tmpfile) !== offset) fail(`koffi's addon moved from offset ${offset} once its offset was written in: a layout that depends on the digits`);
    }
    chmodSync(tmpfile, 0o755);
    renameSync(tmpfile, outfile);
  } finally {
    rmSync(tmpdir, { recursive: true, force: true });
  }
  const what = plugin ? `announcer ${versions.announcer}` : relative(root, entry);
  console.log(`built ${relative(process.cwd(), outfile)}: ${what}, ${target.bunTarget}, Bun ${versions.bun}${plugin ? `, koffi ${versions.koffi}` : ''}`);
}

/** The width of the addon's offset in the code: both passes write the same number of characters. */
const OFFSET_DIGITS = 12;

/** One `bun build --compile` of `entry` to `outfile`, with `addon.offset` written in as koffi's addon's offset (no addon: `entry` needs none). */
async function compile(args, target, entry, addon, outfile, manifest) {
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
    plugins: addon ? [embedPlugin(addon, used)] : [],
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
  if (addon && !used.addon) fail('the bundle does not load koffi through src/sys/koffi.ts');
  const packages = bundledPackages(result.metafile, addon?.path);
  const strays = [...packages].filter((p) => !(p in (manifest.dependencies ?? {})));
  // THIRD_PARTY_NOTICES covers the dependencies in package.json.
  if (strays.length) fail(`bundled packages that are not dependencies in package.json: ${strays.join(', ')}`);
}

try {
  await main();
} catch (err) {
  const messages = err instanceof AggregateError ? err.errors.map((e) => e?.message ?? String(e)) : [err?.message ?? String(err)];
  console.error(`build: ${messages.join('\nbuild: ')}`);
  if (!(err instanceof BuildError || err instanceof AggregateError)) console.error(err);
  process.exit(1);
}
