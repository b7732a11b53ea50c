// Whose view of the file system a path is resolved in: the process that sent
// the request (its mount namespace and root), not whichever started the
// announcer. See docs/design.md, "Whose view of the file system".
//
// Why it is built this way: /proc/PID/root reaches the caller's mounts, but the
// pid is only good while the caller waits on the socket (it may be reused once
// the caller exits). So the caller's root directory is opened then (O_PATH: it
// pins a mount, never a netns) and held; every path is resolved afresh under it
// (root-path.ts) for each use, so a deleted pod netns is never kept alive by us.
// The caller's own netns (the host side of its pods) is held the same way when
// it is not the announcer's: that is the runtime's netns, never a pod's.
import { closeSync, lstatSync, openSync, readlinkSync } from 'node:fs';
import { ABI } from './abi/kernel-abi';
import { fileId, sameFile, type FileId } from './file-id';
import { resolveUnderRoot, type RootLookup } from '../root-path';

/** A caller's namespaces: its mount namespace (of /proc/PID/ns/mnt) and network namespace (/proc/PID/ns/net). */
export interface CallerIds {
  mnt: FileId;
  net: FileId;
}

/** How one caller sees the file system and the host's links. */
export interface CallerView {
  /** Its namespaces: a job records them, to be resumed in the same view. */
  readonly caller: CallerIds;
  /** The caller's netns as a path the announcer opens, when it is not the announcer's own. */
  readonly hostNetns?: string | undefined;
  /**
   * A path the announcer opens to reach the file that `path` names to the caller; with `followLast` false a symlink
   * at its end is not followed (a log file). Throws TooManyLinksError.
   */
  path(path: string, opts?: { followLast?: boolean }): string;
}

/** A view holding fds of the caller's root or netns; close releases them. */
export interface HeldView extends CallerView {
  close(): void;
}

/** The announcer's own view, with its root's identity. */
export interface OwnView extends CallerView {
  readonly root: FileId;
}

/** Why a caller's view cannot be had; its message names the reason. */
export class CallerViewError extends Error {
  override name = 'CallerViewError';
}

/** The announcer's own view: paths as they are, at no cost. */
export function ownView(proc = '/proc'): OwnView {
  const caller = { mnt: fileId(`${proc}/self/ns/mnt`), net: fileId(`${proc}/self/ns/net`) };
  return { caller, root: fileId(`${proc}/self/root`), path: (p) => p };
}

/**
 * The view of the process at `proc` (/proc/PID) whose namespaces and root were `ids`: its root opened O_PATH unless it
 * is the announcer's, its netns opened unless it is the announcer's, each checked to be the one `ids` names. Throws
 * CallerViewError when one changed meanwhile (the caller exited).
 */
export function openProcessView(proc: string, ids: CallerIds & { root: FileId }, own: OwnView): HeldView {
  const fds: number[] = [];
  try {
    const sameFs = sameFile(ids.mnt, own.caller.mnt) && sameFile(ids.root, own.root);
    const root = sameFs ? undefined : heldOpen(`${proc}/root`, ABI.O_PATH | ABI.O_DIRECTORY, ids.root, fds);
    const net = sameFile(ids.net, own.caller.net) ? undefined : heldOpen(`${proc}/ns/net`, ABI.O_RDONLY, ids.net, fds);
    return {
      caller: { mnt: ids.mnt, net: ids.net },
      hostNetns: net === undefined ? undefined : `/proc/self/fd/${net}`,
      path: root === undefined ? (p) => p : underRoot(`/proc/self/fd/${root}`),
      close: () => fds.forEach((fd) => closeSync(fd)),
    };
  } catch (err) {
    for (const fd of fds) closeSync(fd);
    throw err;
  }
}

function heldOpen(path: string, flags: number, expect: FileId, fds: number[]): number {
  const fd = openSync(path, flags | ABI.O_CLOEXEC);
  fds.push(fd);
  if (!sameFile(fileId(`/proc/self/fd/${fd}`), expect))
    throw new CallerViewError(`${path} changed while it was opened (the caller exited)`);
  return fd;
}

/** Paths resolved under the root directory `base` (/proc/self/fd/N of a held root). */
function underRoot(base: string): CallerView['path'] {
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
  return (p, opts) => under(resolveUnderRoot(p, lookup, opts));
}
