// Whose view of the file system a path is resolved in: the process that sent
// the request (its mount namespace and root), not whichever started the
// announcer. See docs/design.md, "Whose view of the file system".
//
// Why it is built this way: /proc/PID/root reaches the caller's mounts, but the
// pid is only good while the caller waits on the socket (it may be reused once
// the caller exits). So the caller's root directory is opened then (O_PATH: it
// pins a mount, never a netns) and held; every path is resolved afresh under it
// (root-path.ts) for each use, so a deleted netns is never kept alive by us.
import { closeSync, lstatSync, openSync, readlinkSync, statSync } from 'node:fs';
import { ABI } from './abi/kernel-abi';
import { resolveUnderRoot, type RootLookup } from './root-path';

/** A namespace's or directory's identity (device and inode). */
export interface FileId {
  dev: number;
  ino: number;
}

/** How one caller sees the file system. */
export interface CallerView {
  /** The caller's mount namespace (of /proc/PID/ns/mnt): a job records it, to be resumed in the same view. */
  readonly mntNs: FileId;
  /**
   * A path the announcer opens to reach the file that `path` names to the caller; with `followLast` false a symlink
   * at its end is not followed (a log file). Throws TooManyLinksError.
   */
  path(path: string, opts?: { followLast?: boolean }): string;
}

/** A view through a held directory fd of the caller's root; close releases it. */
export interface HeldView extends CallerView {
  close(): void;
}

/** Why a caller's view cannot be had; its message names the reason. */
export class CallerViewError extends Error {
  override name = 'CallerViewError';
}

/** The identity of the file `path` leads to (following symlinks, magic links included). */
export function fileId(path: string): FileId {
  const st = statSync(path);
  return { dev: st.dev, ino: st.ino };
}

/** Whether two identities are one file. */
export function sameFile(a: FileId, b: FileId): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** The announcer's own view: paths as they are, at no cost. */
export function ownView(): CallerView {
  return { mntNs: fileId('/proc/self/ns/mnt'), path: (p) => p };
}

/**
 * Opens the root directory at `procRoot` (/proc/PID/root) O_PATH, checks it is the one `expectRoot` names, and
 * resolves paths under it; `mntNs` is the namespace it belongs to. Throws CallerViewError when it changed meanwhile.
 */
export function openRootView(procRoot: string, mntNs: FileId, expectRoot: FileId): HeldView {
  const fd = openSync(procRoot, ABI.O_PATH | ABI.O_DIRECTORY | ABI.O_CLOEXEC);
  const base = `/proc/self/fd/${fd}`;
  if (!sameFile(fileId(base), expectRoot)) {
    closeSync(fd);
    throw new CallerViewError(`${procRoot} changed while it was opened (the caller exited)`);
  }
  const under = (rel: string): string => (rel === '' ? base : `${base}/${rel}`);
  const lookup: RootLookup = {
    kind: (rel) => {
      try {
        return lstatSync(under(rel)).isSymbolicLink() ? 'symlink' : 'other';
      } catch {
        return 'other'; // missing: opening it later fails as it would have for the caller
      }
    },
    readlink: (rel) => readlinkSync(under(rel)),
  };
  return { mntNs, path: (p, opts) => under(resolveUnderRoot(p, lookup, opts)), close: () => closeSync(fd) };
}
