// Resolving a path as a process with another root sees it: pure, over an
// injected look-up, so that the walk is tested without a second root.
//
// Why by hand: an absolute symlink met under /proc/PID/root (/var/run -> /run)
// is followed by the kernel from the RESOLVER's root, not the caller's. So each
// component is looked at without following it (lstat), and a symlink's target
// is spliced in here, an absolute one from the caller's root. ".." never climbs
// above that root, as in the kernel's walk under a chroot.

/** How the walk looks at a path relative to the caller's root ('' is the root itself). */
export interface RootLookup {
  /** What `rel` is, without following a last-component symlink. */
  kind(rel: string): 'symlink' | 'other';
  /** A symlink's target. */
  readlink(rel: string): string;
}

/** Symlinks followed per path at most, as the kernel's MAXSYMLINKS (40). */
export const MAX_HOPS = 40;

/** A namespace magic link's target as /proc shows it, e.g. `net:[4026531840]`: the kernel follows it, not the walk. */
const MAGIC = /^[a-z_]+:\[\d+\]$/;

/** Thrown when a path has more than MAX_HOPS symlinks; `code` as the kernel's. */
export class TooManyLinksError extends Error {
  override name = 'TooManyLinksError';
  readonly code = 'ELOOP';
}

/**
 * `path` (absolute; a relative one is taken from the root) resolved under the caller's root into a path relative to
 * that root whose components are no symlinks, except a last one the kernel must follow (a namespace's magic link, or a
 * missing file; with `followLast` false, any last one: O_NOFOLLOW then refuses it). Components that do not exist are
 * kept as they are: opening the result then fails as it would have.
 */
export function resolveUnderRoot(path: string, fs: RootLookup, opts: { followLast?: boolean } = {}): string {
  const pending = split(path);
  const done: string[] = [];
  let hops = 0;
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === '.') continue;
    if (name === '..') {
      done.pop();
      continue;
    }
    const rel = [...done, name].join('/');
    if ((pending.length === 0 && opts.followLast === false) || fs.kind(rel) !== 'symlink') {
      done.push(name);
      continue;
    }
    const target = fs.readlink(rel);
    if (MAGIC.test(target)) {
      done.push(name);
      continue;
    }
    if (++hops > MAX_HOPS) throw new TooManyLinksError(`too many levels of symbolic links in ${path}`);
    if (target.startsWith('/')) done.length = 0;
    pending.unshift(...split(target));
  }
  return done.join('/');
}

function split(path: string): string[] {
  return path.split('/').filter((c) => c !== '');
}
