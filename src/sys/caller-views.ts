// The announcer's callers' views, by mount namespace and root: one held root
// fd per distinct view (a few per node), so that later rounds resolve a job's
// paths as its caller did, after that caller has exited.
import {
  CallerViewError,
  fileId,
  openRootView,
  ownView,
  sameFile,
  type CallerView,
  type FileId,
  type HeldView,
} from './caller-view';

/** Views held at most; past it the least recently used is closed (its jobs fall back as after a hand-over). */
export const MAX_HELD_VIEWS = 64;

/** Opens and keeps the views of the processes that send requests. */
export class CallerViews {
  private readonly held = new Map<string, HeldView>();
  private readonly own: CallerView;
  private readonly ownRoot: FileId;

  constructor(private readonly proc = '/proc') {
    this.own = ownView();
    this.ownRoot = fileId(`${proc}/self/root`);
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
   * The view to resume a recorded job in, by the mount namespace it recorded: the announcer's own (also for a record
   * without one), one held, or pid 1's (a hostPID DaemonSet); undefined when none is that namespace.
   */
  forRecorded(mntNs: FileId | undefined): CallerView | undefined {
    if (mntNs === undefined || sameFile(mntNs, this.own.mntNs)) return this.own;
    for (const view of this.held.values()) if (sameFile(view.mntNs, mntNs)) return view;
    try {
      if (sameFile(fileId(`${this.proc}/1/ns/mnt`), mntNs)) return this.ofProcess(`${this.proc}/1`);
    } catch {
      // pid 1 not visible, or exiting: no view
    }
    return undefined;
  }

  /** Releases every held root. */
  close(): void {
    for (const view of this.held.values()) view.close();
    this.held.clear();
  }

  private ofProcess(proc: string): CallerView {
    const mntNs = fileId(`${proc}/ns/mnt`);
    const root = fileId(`${proc}/root`);
    if (sameFile(mntNs, this.own.mntNs) && sameFile(root, this.ownRoot)) return this.own;
    const key = `${mntNs.dev}:${mntNs.ino}/${root.dev}:${root.ino}`;
    const kept = this.held.get(key);
    if (kept) {
      this.held.delete(key); // most recently used last
      this.held.set(key, kept);
      return kept;
    }
    const view = openRootView(`${proc}/root`, mntNs, root);
    this.held.set(key, view);
    for (const [k, old] of this.held) {
      if (this.held.size <= MAX_HELD_VIEWS) break;
      this.held.delete(k);
      old.close();
    }
    return view;
  }
}
