// Builds bin/announcer: one executable file that is the whole plugin.
//
//   #!/usr/bin/env node
//   <bootstrap: src/native/bootstrap.ts>      compiles `main` with a V8 code cache
//   /*@cni-announcer-addons                   the trailer, one comment (see src/native/trailer.ts):
//   main    <sha256> <base64 of the bundled plugin, src/main.ts>
//   koffi   <sha256> <base64 of brotli(koffi.node)>
//   netlink <sha256> <base64 of brotli(netlink's node.napi.node)>
//   */
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync } from 'node:zlib';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
// Usage: node scripts/build.mjs [--no-minify] [OUTFILE]   (--no-minify: readable profiles)
const args = process.argv.slice(2);
const minify = !args.includes('--no-minify');
const outArg = args.find((a) => !a.startsWith('--'));
const outfile = outArg ? resolve(outArg) : join(root, 'bin', 'announcer');
const platform = `${process.platform}-${process.arch}`;

/** The .node files to embed, by name. */
const addons = {
  koffi: join(dirname(require.resolve(`@koromix/koffi-${platform}/package.json`)), `${process.platform}_${process.arch}`, 'koffi.node'),
  netlink: join(dirname(require.resolve('netlink/package.json')), 'prebuilds', platform, 'node.napi.node'),
};

function sha256(bytes) {
  return createHash('sha256').update(bytes).digest('hex');
}

const embedNatives = {
  name: 'embed-natives',
  setup(b) {
    // Take koffi's CommonJS entry: its ESM entry resolves the binary through import.meta.
    b.onResolve({ filter: /^koffi$/ }, () => ({ path: require.resolve('koffi') }));
    // koffi loads its prebuilt binary from @koromix/koffi-<platform>; only ours is embedded.
    b.onResolve({ filter: /^@koromix\/koffi-/ }, (args) =>
      args.path === `@koromix/koffi-${platform}` ? { path: 'koffi', namespace: 'addon' } : { path: args.path, namespace: 'absent' },
    );
    b.onLoad({ filter: /.*/, namespace: 'absent' }, () => ({ contents: 'module.exports = null;', loader: 'js' }));
    // netlink finds its binding at run time with node-gyp-build; point it at the embedded one.
    b.onLoad({ filter: /netlink[\\/]dist[\\/]raw\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const replaced = source.replace(/require\('node-gyp-build'\)\([^)]*\)/, "require('addon:netlink')");
      if (replaced === source) throw new Error('netlink/dist/raw.js: binding loader not found');
      return { contents: replaced, loader: 'js' };
    });
    b.onResolve({ filter: /^addon:/ }, (args) => ({ path: args.path.slice('addon:'.length), namespace: 'addon' }));
    b.onLoad({ filter: /.*/, namespace: 'addon' }, (args) => ({
      contents: `const { loadEmbeddedAddon } = require(${JSON.stringify(join(root, 'src/native/embedded-addon.ts'))});
module.exports = loadEmbeddedAddon(${JSON.stringify(args.path)}, ${JSON.stringify(sha256(readFileSync(addons[args.path])))});`,
      loader: 'js',
      resolveDir: root,
    }));
  },
};

const common = { bundle: true, platform: 'node', target: 'node20', format: 'cjs', minify, legalComments: 'none', write: false, logLevel: 'warning' };
const [main] = (await build({ ...common, entryPoints: [join(root, 'src/main.ts')], outfile: 'main.js', plugins: [embedNatives] })).outputFiles;
const [bootstrap] = (await build({ ...common, entryPoints: [join(root, 'src/native/bootstrap.ts')], outfile: 'bootstrap.js' })).outputFiles;

const trailer = [`main ${sha256(main.contents)} ${Buffer.from(main.contents).toString('base64')}`];
for (const [name, file] of Object.entries(addons)) {
  const bytes = readFileSync(file);
  trailer.push(`${name} ${sha256(bytes)} ${brotliCompressSync(bytes).toString('base64')}`);
}

mkdirSync(dirname(outfile), { recursive: true });
// Written beside the target and renamed over it: a runtime exec'ing the plugin never sees half a file.
const tmpfile = `${outfile}.${process.pid}.tmp`;
writeFileSync(tmpfile, `#!/usr/bin/env node\n${bootstrap.text}\n/*@cni-announcer-addons\n${trailer.join('\n')}\n*/\n`, { mode: 0o755 });
chmodSync(tmpfile, 0o755);
renameSync(tmpfile, outfile);
console.log(`built ${outfile}`);
