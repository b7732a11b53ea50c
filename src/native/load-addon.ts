// Loads koffi's Node-API addon from bytes the compiled binary carries
// (src/native/embedded-koffi.ts wires it).
//
// dlopen() needs a file. The bytes go into an anonymous O_TMPFILE inode, which
// has no name in any directory, so no other user and no earlier run can plant,
// swap or truncate it, and it vanishes when its last reference goes; the addon
// is dlopen()ed through /proc/self/fd/N and the descriptor closed (the mapping
// keeps the inode alive). Nothing is extracted, cached or looked up by name.
// One addon per process: glibc's dlopen() answers a path it has loaded before
// with the object already loaded, and /proc/self/fd/N paths repeat.
// Bun's own mechanism for embedded addons is not used: it extracts them to
// /tmp/.bun-<uid>-<hash>.node and loads an existing file of that name as is.
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname } from '../path';
import { ABI } from '../sys/abi/kernel-abi';

// O_TMPFILE is __O_TMPFILE|O_DIRECTORY, and O_DIRECTORY differs between x86-64 and arm64.
// O_EXCL with O_TMPFILE: the inode can never be linkat()ed into a directory.
const { O_TMPFILE, O_RDWR, O_EXCL, O_CLOEXEC } = ABI;

/**
 * Where the anonymous file may live, in order: memory first, then the binary's
 * own directory (exec is allowed there, since the binary runs from it), then
 * the usual temporary directories. A directory fails over to the next when it
 * is missing, read-only, full, lacks O_TMPFILE support, or is mounted noexec.
 */
export function addonDirs(execPath: string = process.execPath): string[] {
  return ['/dev/shm', '/run', dirname(execPath), '/tmp', '/var/tmp'];
}

/** The steps of {@link loadKoffiAddon} that touch the system: open(2) (O_TMPFILE), write(2), dlopen, close(2). */
export const systemAddonLoader = {
  /** Opens an anonymous file in `dir`; returns its fd. */
  openAnonymous: (dir: string): number => openSync(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0o500),
  /** Writes the addon's bytes into the file `fd`. */
  write(fd: number, content: Uint8Array): void {
    for (let off = 0; off < content.length; ) off += writeSync(fd, content, off);
  },
  /** process.dlopen of `path` into `module`. */
  dlopen: (module: { exports: unknown }, path: string): void => process.dlopen(module, path),
  close: (fd: number): void => closeSync(fd),
};

/** The steps of {@link loadKoffiAddon} that touch the system, injectable in tests. */
export type AddonLoaderDeps = typeof systemAddonLoader;

/** koffi's API as its addon exports it: what loadKoffi() hands out. */
export interface KoffiAddon {
  version: string;
}

/**
 * Reads koffi's addon whole from `file` and dlopen()s it from an anonymous file in the first of `dirs` that works;
 * throws one error naming each directory and why (in `cause`), and, as koffi's own entry does and with its words,
 * when the addon's version is not `version`.
 */
export function loadKoffiAddon(
  file: string,
  version: string,
  dirs: readonly string[] = addonDirs(),
  deps: AddonLoaderDeps = systemAddonLoader,
): KoffiAddon {
  const content = readFileSync(file);
  const failures: { dir: string; error: unknown }[] = [];
  for (const dir of dirs) {
    const module = { exports: {} as unknown };
    let fd: number | undefined;
    try {
      fd = deps.openAnonymous(dir);
      deps.write(fd, content);
      deps.dlopen(module, `/proc/self/fd/${fd}`);
    } catch (error) {
      failures.push({ dir, error });
      continue;
    } finally {
      if (fd !== undefined) deps.close(fd);
    }
    const addon = module.exports as KoffiAddon;
    if (addon.version !== version) throw new Error('Mismatched native Koffi modules');
    return addon;
  }
  const reasons = failures.map(({ dir, error }) => `${dir}: ${error instanceof Error ? error.message : String(error)}`);
  const why = reasons.join('; ') || 'no directory to try';
  const errors = failures.map((f) => f.error);
  const cause = new AggregateError(errors, 'one failure per directory');
  throw new Error(`cannot load the koffi addon from an anonymous file (${why})`, { cause });
}
