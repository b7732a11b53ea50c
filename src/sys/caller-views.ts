// The announcer's callers' views, by namespaces and root: one held view per
// distinct one (a few per node), so that later rounds resolve a job's paths as
// its caller did, after that caller has exited.
import { readdirSync } from 'node:fs';
import {
  CallerViewError,
  openProcessView,
  ownView,
  type CallerIds,
  type CallerView,
  type HeldView,
  type OwnView,
} from './caller-view';
import { fileId, sameFile, type FileId } from './file-id';

/** Views held at most; past it the least recently used is closed (its jobs fall back as after a hand-over). */
export const MAX_HELD_VIEWS = 64;

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
      throw new CallerViewError(`cannot open the view of the caller (pid ${pid}): ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  /**
   * The view to resume a recorded job in, by the namespaces it recorded: the announcer's own (also for a record
   * without them), one held, or that of a process in both (pid 1 first: a hostPID DaemonSet; else the runtime that
   * sent the ADD, found by a look at /proc once per namespace); undefined when no process is in them any more.
   */
  forRecorded(caller: CallerIds | undefined): CallerView | undefined {
    const same = (v: CallerView): boolean => sameFile(v.caller.mnt, caller!.mnt) && sameFile(v.caller.net, caller!.net);
    if (caller === undefined || same(this.own)) return this.own;
    for (const view of this.held.values()) if (same(view)) return view;
    const key = idsKey([caller.mnt, caller.net]);
    if (this.nowhere.has(key)) return undefined;
    for (const pid of ['1', ...pidsIn(this.proc)]) {
      try {
        const proc = `${this.proc}/${pid}`;
        if (!sameFile(fileId(`${proc}/ns/mnt`), caller.mnt) || !sameFile(fileId(`${proc}/ns/net`), caller.net))
          continue;
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
    if (sameFile(ids.mnt, own.caller.mnt) && sameFile(ids.root, own.root) && sameFile(ids.net, own.caller.net))
      return own;
    const key = idsKey([ids.mnt, ids.root, ids.net]);
    const kept = this.held.get(key);
    if (kept) {
      this.held.delete(key); // most recently used last
      this.held.set(key, kept);
      return kept;
    }
    const view = openProcessView(proc, ids, own);
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
  try {
    return readdirSync(proc).filter((name) => /^[1-9][0-9]*$/.test(name));
  } catch {
    return [];
  }
}
