// Bundles src/main.ts into one executable file, bin/announcer, with the
// native addons of koffi and netlink embedded (see src/native/embedded-addon.ts).
import { createHash } from 'node:crypto';
import { appendFileSync, chmodSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { brotliCompressSync } from 'node:zlib';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
const outfile = process.argv[2] ? resolve(process.argv[2]) : join(root, 'bin', 'announcer');
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

mkdirSync(dirname(outfile), { recursive: true });
// Built beside the target and renamed over it: a runtime exec'ing the plugin never sees half a file.
const tmpfile = `${outfile}.${process.pid}.tmp`;
await build({
  entryPoints: [join(root, 'src/main.ts')],
  outfile: tmpfile,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  minify: true,
  legalComments: 'none',
  banner: { js: '#!/usr/bin/env node' },
  plugins: [embedNatives],
  logLevel: 'warning',
});
// The addons go in a trailing comment: see src/native/embedded-addon.ts.
const trailer = Object.entries(addons).map(([name, file]) => {
  const bytes = readFileSync(file);
  return `${name} ${sha256(bytes)} ${brotliCompressSync(bytes).toString('base64')}`;
});
appendFileSync(tmpfile, `\n/*@cni-announcer-addons\n${trailer.join('\n')}\n*/\n`);
chmodSync(tmpfile, 0o755);
renameSync(tmpfile, outfile);
console.log(`built ${outfile}`);
