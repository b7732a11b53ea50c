import { fstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addonDirs, loadKoffiAddon, systemAddonLoader, type AddonLoaderDeps } from '../../../src/native/load-addon';
import { useTempDir } from '../../support/temp-dir';

const require = createRequire(import.meta.url);
/** koffi's real prebuilt addon for this machine, as the build embeds it. */
const KOFFI_NODE = join(
  dirname(require.resolve(`@koromix/koffi-${process.platform}-${process.arch}/package.json`)),
  `${process.platform}_${process.arch}`,
  'koffi.node',
);
const KOFFI_VERSION = (
  JSON.parse(readFileSync(join(dirname(require.resolve('koffi')), 'package.json'), 'utf8')) as { version: string }
).version;

/** What the tests read of koffi's API. */
type KoffiApi = { version: string; load: unknown; sizeof: unknown };

/** The real loader, recording each fd it opened and what the directory held while the addon was being loaded. */
function recordingLoader() {
  const fds: number[] = [];
  const seen: { link: string; listing: string[] }[] = [];
  const deps: AddonLoaderDeps = {
    ...systemAddonLoader,
    openAnonymous(dir) {
      const fd = systemAddonLoader.openAnonymous(dir);
      fds.push(fd);
      return fd;
    },
    dlopen(module, path) {
      seen.push({ link: readlinkSync(path), listing: readdirSync(dirname(readlinkSync(path))) });
      systemAddonLoader.dlopen(module, path);
    },
  };
  return { deps, fds, seen };
}

/** Steps that write into nothing and load an addon of `version`, recording the bytes written. */
function fakeSteps(version: string) {
  const written: Uint8Array[] = [];
  const closed: number[] = [];
  const deps: AddonLoaderDeps = {
    openAnonymous: () => 42,
    write: (_fd, content) => void written.push(content),
    dlopen: (loaded) => void (loaded.exports = { version }),
    close: (fd) => void closed.push(fd),
  };
  return { deps, written, closed };
}

function isOpen(fd: number): boolean {
  try {
    fstatSync(fd);
    return true;
  } catch {
    return false;
  }
}

describe('loadKoffiAddon: the anonymous file', () => {
  let dir: string;
  useTempDir('announcer-addon-', (d) => (dir = d));

  it('loads a real addon from an anonymous file, leaves nothing in the directory and closes its fd', () => {
    const { deps, fds, seen } = recordingLoader();
    const koffi = loadKoffiAddon(KOFFI_NODE, KOFFI_VERSION, [dir], deps) as unknown as KoffiApi;
    expect(koffi.version).toBe(KOFFI_VERSION);
    expect(typeof koffi.load).toBe('function');
    // While it was dlopen()ed, the file had no name: /proc shows an unlinked inode, the directory is empty.
    expect(seen).toHaveLength(1);
    expect(seen[0]!.link).toMatch(new RegExp(`^${dir}/#\\d+ \\(deleted\\)$`));
    expect(seen[0]!.listing).toEqual([]);
    expect(readdirSync(dir)).toEqual([]);
    expect(fds).toHaveLength(1);
    expect(isOpen(fds[0]!)).toBe(false);
  });

  it('goes on to the next directory when one cannot hold the file', () => {
    const { deps, fds, seen } = recordingLoader();
    const missing = join(dir, 'missing');
    const koffi = loadKoffiAddon(KOFFI_NODE, KOFFI_VERSION, [missing, dir], deps);
    expect(koffi.version).toBe(KOFFI_VERSION);
    expect(seen.map((s) => dirname(s.link))).toEqual([dir]);
    expect(isOpen(fds[0]!)).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('names every directory and its failure when none works, closing every fd it opened', () => {
    // A real open and write; dlopen() fails as it does on a noexec mount. (A real dlopen of bad bytes could
    // be answered from glibc's list of loaded objects instead: it matches by name, and an earlier test
    // loaded an addon from a /proc/self/fd path that this fd number may repeat.)
    const { deps, fds } = recordingLoader();
    deps.dlopen = (_module, path) => {
      throw new Error(`${path}: failed to map segment from shared object`);
    };
    const missing = join(dir, 'missing');
    let error: Error | undefined;
    try {
      loadKoffiAddon(KOFFI_NODE, KOFFI_VERSION, [missing, dir], deps);
    } catch (e) {
      error = e as Error;
    }
    expect(error?.message).toMatch(
      new RegExp(
        `^cannot load the koffi addon from an anonymous file \\(${missing}: ENOENT[^;]*; ${dir}: ` +
          `/proc/self/fd/\\d+: failed to map segment from shared object\\)$`,
      ),
    );
    const causes = (error!.cause as AggregateError).errors as NodeJS.ErrnoException[];
    expect(causes).toHaveLength(2);
    expect(causes[0]!.code).toBe('ENOENT');
    expect(fds).toHaveLength(1); // the missing directory gave no fd
    expect(isOpen(fds[0]!)).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('closes the fd when the write fails', () => {
    const { deps, closed } = fakeSteps(KOFFI_VERSION);
    deps.write = () => {
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    };
    expect(() => loadKoffiAddon(KOFFI_NODE, KOFFI_VERSION, ['/full'], deps)).toThrow(
      'cannot load the koffi addon from an anonymous file (/full: ENOSPC: no space left on device, write)',
    );
    expect(closed).toEqual([42]);
  });
});

describe('addonDirs', () => {
  it('tries memory, /run, the binary’s own directory, then the temporary directories', () => {
    expect(addonDirs('/opt/cni/bin/announcer')).toEqual(['/dev/shm', '/run', '/opt/cni/bin', '/tmp', '/var/tmp']);
  });
});

describe('loadKoffiAddon, by default', () => {
  it("reads the embedded file whole, loads it from an anonymous file and hands out koffi's API", () => {
    const koffi = loadKoffiAddon(KOFFI_NODE, KOFFI_VERSION) as unknown as KoffiApi;
    expect(koffi.version).toBe(KOFFI_VERSION);
    expect(typeof koffi.load).toBe('function');
    expect(typeof koffi.sizeof).toBe('function');
  });
});

describe('loadKoffiAddon, faked', () => {
  it('writes the bytes of the file it was given', () => {
    const { deps, written } = fakeSteps(KOFFI_VERSION);
    expect(loadKoffiAddon(KOFFI_NODE, KOFFI_VERSION, ['/x'], deps)).toEqual({ version: KOFFI_VERSION });
    expect(written).toHaveLength(1);
    expect(Buffer.from(written[0]!).equals(readFileSync(KOFFI_NODE))).toBe(true);
  });

  it('refuses an addon of another version, with the words of koffi’s own entry', () => {
    const { deps } = fakeSteps('3.3.3');
    const expected = new Error('Mismatched native Koffi modules');
    expect(() => loadKoffiAddon(KOFFI_NODE, '3.3.4', ['/x'], deps)).toThrow(expected);
  });
});
