// Run with the pinned Bun (JavaScript, as scripts/build.mjs: it uses Bun's API): bundles src/main.ts the way
// scripts/build.mjs does (ESM, one chunk per
// group of modules that load together, the same plugin: Bun twins, koffi's addon as an asset), without
// compiling, and prints the metafile's outputs as JSON: each chunk (by file name) with its inputs
// (relative to the repository) and imports. test/integration/zod-chunks.test.ts reads which chunks a command evaluates.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative, resolve } from 'node:path';
import { embedPlugin } from '../../scripts/build/plugin.ts';

const root = resolve(import.meta.dir, '../..');
const addon = join(root, 'node_modules/@koromix/koffi-linux-x64/linux_x64/koffi.node');
const outdir = mkdtempSync(join(tmpdir(), 'announcer-chunks-'));
try {
  const result = await Bun.build({
    entrypoints: [join(root, 'src/main.ts')],
    target: 'bun',
    format: 'esm',
    splitting: true,
    metafile: true,
    outdir,
    define: { __ANNOUNCER_BUILD_ID__: '"chunks"', __KOFFI_VERSION__: '"0"' },
    plugins: [embedPlugin(root, addon, { addon: false })],
  });
  if (!result.success) throw new Error(result.logs.join('\n'));
  const outputs = {};
  for (const [path, out] of Object.entries(result.metafile.outputs)) {
    // node_modules may be a link to a shared install: a package's files are named from node_modules/ on.
    const inputs = Object.keys(out.inputs).map((p) =>
      relative(root, resolve(p)).replace(/^.*?node_modules\//, 'node_modules/'),
    );
    const imports = out.imports.map((i) => ({ path: basename(i.path), kind: i.kind }));
    outputs[basename(path)] = {
      inputs,
      imports,
      ...(out.entryPoint ? { entryPoint: relative(root, resolve(out.entryPoint)) } : {}),
    };
  }
  console.log(JSON.stringify(outputs));
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
