// The Bun plugin of scripts/build.mjs: it takes koffi's API from its addon, embedded as plain bytes, and
// refuses what cannot, or must not, go into the binary. Its refusals are its whole point: each throws
// and fails the build, naming the importer.
import { existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** What Bun hands an onResolve callback (the part the plugin reads). */
export interface ResolveArgs {
  path: string;
  importer: string;
  kind: string;
}

/** The part of Bun's PluginBuilder the plugin uses (Bun's types are not in this project's tsconfig). */
export interface PluginBuilder {
  onResolve(options: { filter: RegExp }, callback: (args: ResolveArgs) => { path: string } | undefined): void;
}

/**
 * The specifier under which src/native/embedded-koffi.ts imports koffi's addon (declared in src/native/assets.d.ts).
 */
export const ADDON_SPECIFIER = 'cni-announcer:koffi-addon';

// Bun's `node:*` builtins other than node:fs are written in JS, and the first one a run loads costs it
// ~6 MiB and milliseconds (src/path.ts and src/sys/sys-error.ts stand in for the two we used; node:net and
// node:child_process are used by the Node twins alone, src/sys/unix-stream.ts and src/sys/spawn-child.ts,
// which never reach the bundle).
const BUILTIN = /^(?:node:)?(assert|buffer|child_process|crypto|events|module|net|os|path|stream|url|util)(?:\/.*)?$/;

/** The part of Bun.build's metafile that {@link builtinRefusals} reads: each input's imports. */
export interface Metafile {
  inputs: Record<
    string,
    { imports?: readonly { path: string; kind: string; original?: string; external?: boolean }[] }
  >;
}

/**
 * Why the bundle is refused for its `node:*` builtins: one line per import of one other than node:fs by a module
 * under `root`/src. Read from the metafile after bundling, because
 * Bun (1.4.5) resolves builtins before any plugin's onResolve sees them. Input paths are relative to `cwd`.
 */
export function builtinRefusals(metafile: Metafile, root: string, cwd: string): string[] {
  const refusals: string[] = [];
  for (const [input, { imports = [] }] of Object.entries(metafile.inputs)) {
    const importer = relative(root, resolve(cwd, input));
    if (!importer.startsWith('src/')) continue;
    for (const i of imports) {
      const name = i.external ? BUILTIN.exec(i.original ?? i.path)?.[1] : undefined;
      if (name === undefined) continue;
      refusals.push(
        `${importer} imports ${i.original ?? i.path}: product code uses only node:fs (see src/path.ts; ` +
          'a Bun twin, src/sys/X.bun.ts, keeps a Node-only builtin out of the bundle)',
      );
    }
  }
  return refusals;
}

/**
 * The plugin, for a build of `root`'s src/main.ts that embeds `addonAsset`: the file holding koffi's
 * addon for the target. `used.addon` turns true once the bundle takes koffi's addon through
 * src/native/embedded-koffi.ts.
 */
export function embedPlugin(root: string, addonAsset: string, used: { addon: boolean }) {
  const rel = (file: string) => relative(root, file);
  const koffiUser = join(root, 'src/sys/libc.ts');
  const loader = join(root, 'src/native/embedded-koffi.ts');
  return {
    name: 'cni-announcer',
    setup(b: PluginBuilder): void {
      // koffi's JS entry finds its addon in node_modules and wraps it in deprecation shims; the bundle
      // takes the addon's own exports instead (src/native/embedded-koffi.ts): none of koffi's JS is
      // bundled and no build-machine path is left to look in.
      b.onResolve({ filter: /^koffi$/ }, (a) => {
        if (a.importer === koffiUser && a.kind === 'require-call') return { path: loader };
        // Loading koffi dlopen()s its addon: only loadKoffi() in src/sys/libc.ts may, on first use.
        throw new Error(`${rel(a.importer)} loads koffi (${a.kind}): take it from loadKoffi() in src/sys/libc.ts`);
      });
      b.onResolve({ filter: new RegExp(`^${ADDON_SPECIFIER}$`) }, (a) => {
        if (a.importer !== loader)
          throw new Error(`${rel(a.importer)} imports koffi's addon: only src/native/embedded-koffi.ts may`);
        used.addon = true;
        return { path: addonAsset };
      });
      // A module with a Bun twin (src/sys/X.bun.ts beside src/sys/X.ts): the binary takes the twin
      // wherever X is imported. Node (the unit tests) loads X itself; nothing picks at run time.
      b.onResolve({ filter: /^(\.\.?\/)+[\w/-]+$/ }, (a) => {
        const twin = `${resolve(dirname(a.importer), a.path)}.bun.ts`;
        return a.importer.startsWith(join(root, 'src')) && existsSync(twin) ? { path: twin } : undefined;
      });
      // Bun would embed any other native module itself and extract it to /tmp at run time.
      b.onResolve({ filter: /\.node$/ }, (a) => {
        throw new Error(`${rel(a.importer)} requires the native module ${a.path}: only koffi's addon may be embedded`);
      });
      // The netlink package's socket addon needs libuv's uv_poll_init, which Bun lacks.
      b.onResolve({ filter: /^netlink(\/|$)/ }, (a) => {
        throw new Error(`${rel(a.importer)} imports '${a.path}', which cannot run under Bun: use src/sys/rtnl.ts`);
      });
    },
  };
}
