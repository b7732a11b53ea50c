// The build's plugin, driven through a recording stand-in for Bun's PluginBuilder: what it resolves
// and what it refuses (each refusal fails the build).
import { describe, expect, it } from 'vitest';
import {
  ADDON_SPECIFIER,
  builtinRefusals,
  embedPlugin,
  type Metafile,
  type ResolveArgs,
} from '../../../scripts/build/plugin';

const ROOT = '/checkout';
const ASSET = '/checkout/node_modules/.cache/cni-announcer/koffi-3.3.4-linux-x64.addon';

/**
 * The plugin's answer for `path` imported by `importer` (relative to `root`, whose files on disk decide twins) with
 * `kind`: the first handler whose filter matches, as Bun asks them.
 */
function resolver(root = ROOT) {
  const handlers: { filter: RegExp; callback: (a: ResolveArgs) => { path: string } | undefined }[] = [];
  const used = { addon: false };
  embedPlugin(root, ASSET, used).setup({
    onResolve: (options, callback) => void handlers.push({ filter: options.filter, callback }),
  });
  const resolve = (path: string, importer: string, kind = 'import-statement') => {
    const handler = handlers.find((h) => h.filter.test(path));
    return handler?.callback({ path, importer: `${root}/${importer}`, kind });
  };
  return { resolve, used };
}

describe("the build's plugin", () => {
  const pointsSrcSysTitle =
    "points src/sys/libc.ts's require of koffi at the embedded loader, and the loader's asset at the addon file";
  it(pointsSrcSysTitle, () => {
    const { resolve, used } = resolver();
    expect(resolve('koffi', 'src/sys/libc.ts', 'require-call')).toEqual({
      path: `${ROOT}/src/native/embedded-koffi.ts`,
    });
    expect(used.addon).toBe(false);
    expect(resolve(ADDON_SPECIFIER, 'src/native/embedded-koffi.ts')).toEqual({ path: ASSET });
    expect(used.addon).toBe(true);
  });

  it('refuses koffi anywhere else, or as a static import', () => {
    const { resolve } = resolver();
    expect(() => resolve('koffi', 'src/sys/libc.ts', 'import-statement')).toThrow(
      'src/sys/libc.ts loads koffi (import-statement): take it from loadKoffi() in src/sys/libc.ts',
    );
    expect(() => resolve('koffi', 'src/sys/socket.ts', 'require-call')).toThrow(
      'src/sys/socket.ts loads koffi (require-call)',
    );
  });

  it("refuses the addon's specifier from any module but the loader", () => {
    const { resolve, used } = resolver();
    expect(() => resolve(ADDON_SPECIFIER, 'src/main.ts')).toThrow(
      "src/main.ts imports koffi's addon: only src/native/embedded-koffi.ts may",
    );
    expect(used.addon).toBe(false);
  });

  it('refuses any other native module and the netlink package', () => {
    const { resolve } = resolver();
    expect(() => resolve('./build/Release/x.node', 'node_modules/dep/index.js')).toThrow(
      "node_modules/dep/index.js requires the native module ./build/Release/x.node: only koffi's addon may be embedded",
    );
    expect(() => resolve('netlink', 'src/sys/rtnl.ts')).toThrow(
      "src/sys/rtnl.ts imports 'netlink', which cannot run under Bun: use src/sys/rtnl.ts",
    );
    expect(() => resolve('netlink/lib/rt', 'src/x.ts')).toThrow("src/x.ts imports 'netlink/lib/rt'");
    expect(resolve('netlinks', 'src/x.ts')).toBeUndefined();
  });
});

describe('builtinRefusals', () => {
  /**
   * A metafile as Bun writes it, paths relative to the working directory `cwd`: `imports` per input, all external
   * builtins.
   */
  function metafile(imports: Record<string, string[]>): Metafile {
    return {
      inputs: Object.fromEntries(
        Object.entries(imports).map(([input, specifiers]) => [
          input,
          {
            imports: specifiers.map((s) => ({
              path: s.replace(/^node:/, ''),
              kind: 'import-statement',
              external: true,
              ...(s.startsWith('node:') ? { original: s } : {}),
            })),
          },
        ]),
      ),
    };
  }
  const refusal = (importer: string, specifier: string) =>
    `${importer} imports ${specifier}: product code uses only node:fs (see src/path.ts; ` +
    'a Bun twin, src/sys/X.bun.ts, keeps a Node-only builtin out of the bundle)';

  const resolvesSrcModuleTitle =
    'resolves a src module with a Bun twin to the twin, wherever it is ' +
    'imported from, and leaves other modules alone';
  it(resolvesSrcModuleTitle, () => {
    const { resolve } = resolver();
    const twin = (p: string) => p.endsWith('.bun.ts');
    // The resolver reads the disk: these twins exist in this checkout.
    const real = resolver(process.cwd());
    expect(real.resolve('../sys/unix-stream', 'src/shim/shim-deps.ts')).toEqual({
      path: `${process.cwd()}/src/sys/unix-stream.bun.ts`,
    });
    expect(real.resolve('./sys/stdio', 'src/main.ts')).toEqual({ path: `${process.cwd()}/src/sys/stdio.bun.ts` });
    expect(real.resolve('../sys/spawn-child', 'src/shim/shim-deps.ts')).toEqual({
      path: `${process.cwd()}/src/sys/spawn-child.bun.ts`,
    });
    expect(real.resolve('./exchange', 'src/shim/shim-deps.ts')).toBeUndefined();
    expect(real.resolve('../src/sys/stdio', 'scripts/x.ts')).toBeUndefined(); // outside src: no twin
    expect(twin(resolve('./x', 'src/a.ts')?.path ?? '')).toBe(false);
  });

  it('refuses node:* builtins other than node:fs in product code, with or without the prefix, and subpaths', () => {
    const specifiers = ['node:os', 'os', 'node:path', 'util', 'node:stream/web', 'node:child_process', 'net', 'crypto'];
    expect(builtinRefusals(metafile({ 'src/cni/dispatch.ts': [...specifiers, 'node:fs', 'fs'] }), ROOT, ROOT)).toEqual(
      specifiers.map((s) => refusal('src/cni/dispatch.ts', s)),
    );
  });

  it('exempts no module: the Node twins, whose builtins the binary never holds, would be refused too', () => {
    const meta = metafile({
      'src/sys/unix-stream.ts': ['node:net'],
      'src/sys/spawn-child.ts': ['node:child_process'],
    });
    expect(builtinRefusals(meta, ROOT, ROOT)).toEqual([
      refusal('src/sys/unix-stream.ts', 'node:net'),
      refusal('src/sys/spawn-child.ts', 'node:child_process'),
    ]);
  });

  it('reads input paths relative to the working directory, and leaves builtins imported outside src/ alone', () => {
    const meta = metafile({
      '../checkout/src/main.ts': ['node:os'],
      'node_modules/dep/index.js': ['node:os'],
      'scripts/bench/empty-entry.ts': ['path'],
    });
    expect(builtinRefusals(meta, ROOT, '/elsewhere')).toEqual([refusal('src/main.ts', 'node:os')]);
    expect(builtinRefusals(meta, ROOT, '/a/b')).toEqual([]);
  });

  it('ignores imports that resolved to files', () => {
    const meta: Metafile = {
      inputs: {
        'src/main.ts': {
          imports: [
            { path: 'src/path.ts', kind: 'import-statement' },
            { path: 'path', kind: 'import-statement' },
          ],
        },
      },
    };
    expect(builtinRefusals(meta, ROOT, ROOT)).toEqual([]);
  });
});
