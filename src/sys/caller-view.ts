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
// it is not the announcer's: that is the runtime's netns, never a pod's. One
// view is held per distinct caller (a few per node), so that later rounds
// resolve a job's paths as its caller did, after that caller has exited.
import { closeSync, lstatSync, openSync, readdirSync, readlinkSync } from 'node:fs';
import { ABI } from './abi/kernel-abi';
import { fileId, sameFile, type FileId } from './file-id';
import { attempt } from './sys-error';
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
interface HeldView extends CallerView {
  close(): void;
}

/** The announcer's own view, with its root's identity. */
interface OwnView extends CallerView {
  readonly root: FileId;
}

/** Why a caller's view cannot be had; its message names the reason. */
export class CallerViewError extends Error {
  override name = 'CallerViewError';
}

/** Views held at most; past it the least recently used is closed (its jobs fall back as after a hand-over). */
const MAX_HELD_VIEWS = 64;

/** Opens and keeps the views of the processes that send requests. */
export class CallerViews {
  private readonly held = new Map<string, HeldView>();
  private readonly own: OwnView;
  /** Namespaces no process was found in: not looked for again. */
  private readonly nowhere = new Set<string>();

  constructor(private readonly proc = '/proc') {
    this.own = ownView(proc);
  }

  /** The announcer's own view. */
  get mine(): CallerView {
    return this.own;
  }

  /**
   * The view of the peer whose pid SO_PEERCRED gave, opened now (while it waits on the socket: confirm afterwards that
   * it still does). Throws CallerViewError naming why there is none.
   */
  ofPeer(pid: number): CallerView {
    if (!Number.isInteger(pid) || pid <= 0)
      throw new CallerViewError(
        "the caller's pid is not visible from the announcer's pid namespace (SO_PEERCRED gave 0), so its paths " +
          "cannot be resolved as it sees them: run the announcer in the host's pid namespace (hostPID)",
      );
    try {
      return this.ofProcess(`${this.proc}/${pid}`);
    } catch (err) {
      if (err instanceof CallerViewError) throw err;
      const why = (err as Error).message;
      throw new CallerViewError(`cannot open the view of the caller (pid ${pid}): ${why}`, { cause: err });
    }
  }

  /**
   * The view to resume a recorded job in, by the namespaces it recorded: the announcer's own (also for a record
   * without them), one held, or that of a process in both (pid 1 first: a hostPID DaemonSet; else the runtime that
   * sent the ADD, found by a look at /proc once per namespace); undefined when no process is in them any more.
   */
  forRecorded(caller: CallerIds | undefined): CallerView | undefined {
    if (caller === undefined) return this.own;
    const key = idsKey([caller.mnt, caller.net]);
    const same = (v: CallerView): boolean => idsKey([v.caller.mnt, v.caller.net]) === key;
    if (same(this.own)) return this.own;
    for (const view of this.held.values()) if (same(view)) return view;
    if (this.nowhere.has(key)) return undefined;
    for (const pid of ['1', ...pidsIn(this.proc)]) {
      try {
        const proc = `${this.proc}/${pid}`;
        if (idsKey([fileId(`${proc}/ns/mnt`), fileId(`${proc}/ns/net`)]) !== key) continue;
        const view = this.ofProcess(proc);
        if (same(view)) return view;
      } catch {
        // gone meanwhile, or not ours to look at: the next
      }
    }
    if (this.nowhere.size >= MAX_HELD_VIEWS) this.nowhere.clear();
    this.nowhere.add(key); // no process returns to a namespace once it is empty
    return undefined;
  }

  /** Releases every held root. */
  close(): void {
    for (const view of this.held.values()) view.close();
    this.held.clear();
  }

  private ofProcess(proc: string): CallerView {
    const ids = { mnt: fileId(`${proc}/ns/mnt`), net: fileId(`${proc}/ns/net`), root: fileId(`${proc}/root`) };
    const own = this.own;
    const key = idsKey([ids.mnt, ids.root, ids.net]);
    if (key === idsKey([own.caller.mnt, own.root, own.caller.net])) return own;
    const view = this.held.get(key) ?? openProcessView(proc, ids, own);
    this.held.delete(key); // most recently used last
    this.held.set(key, view);
    for (const [k, old] of this.held) {
      if (this.held.size <= MAX_HELD_VIEWS) break;
      this.held.delete(k);
      old.close();
    }
    return view;
  }
}

function idsKey(ids: readonly FileId[]): string {
  return ids.map((id) => `${id.dev}:${id.ino}`).join('/');
}

/** The pids /proc lists (none when it cannot be read). */
function pidsIn(proc: string): string[] {
  return attempt(() => readdirSync(proc).filter((name) => /^[1-9][0-9]*$/.test(name))) ?? [];
}

/** The announcer's own view: paths as they are, at no cost. */
function ownView(proc: string): OwnView {
  const caller = { mnt: fileId(`${proc}/self/ns/mnt`), net: fileId(`${proc}/self/ns/net`) };
  return { caller, root: fileId(`${proc}/self/root`), path: (p) => p };
}

/**
 * The view of the process at `proc` (/proc/PID) whose namespaces and root were `ids`: its root opened O_PATH unless it
 * is the announcer's, its netns opened unless it is the announcer's, each checked to be the one `ids` names. Throws
 * CallerViewError when one changed meanwhile (the caller exited).
 */
function openProcessView(proc: string, ids: CallerIds & { root: FileId }, own: OwnView): HeldView {
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
    // A missing file is 'other': opening it later fails as it would have for the caller.
    kind: (rel) => (attempt(() => lstatSync(under(rel)).isSymbolicLink()) ? 'symlink' : 'other'),
    readlink: (rel) => readlinkSync(under(rel)),
  };
  return (p, opts) => under(resolveUnderRoot(p, lookup, opts));
}
