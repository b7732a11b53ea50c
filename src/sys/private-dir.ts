// A directory only the plugin's uid can change: the state dir. Records there
// name a netns to enter and MACs to restore, so a directory that others can
// write (or swap) would let them steer a root process.
import { lstatSync, mkdirSync, realpathSync, statSync, type Stats } from 'node:fs';
import { dirname } from '../path';
import { attempt } from './sys-error';

/** A directory the plugin must not use, with what to do about it in the message. */
export class UnsafeDirError extends Error {
  override name = 'UnsafeDirError';
}

const S_ISVTX = 0o1000;

/**
 * Checks that `path` is a directory (not a symlink) owned by `uid`, that
 * neither group nor others can write it, and that no parent lets another user
 * rename it away: each parent is owned by root or `uid`, and one that others
 * can write has the sticky bit (as /tmp does). Throws UnsafeDirError naming the
 * fix; other errors (ENAMETOOLONG, EACCES, ENOTDIR in the path…) are rethrown. 'missing' when
 * `path` is not there, 'ok' when it passes.
 */
export function checkPrivateDir(path: string, uid: number = process.geteuid?.() ?? 0): 'ok' | 'missing' {
  const st = attempt(() => lstatSync(path), 'ENOENT');
  if (st === undefined) return 'missing';
  const owner = uid === 0 ? 'root' : String(uid);
  if (st.isSymbolicLink()) throw new UnsafeDirError(`${path} is a symbolic link: set it to the directory itself`);
  if (!st.isDirectory()) throw new UnsafeDirError(`${path} is not a directory: remove it, or choose another path`);
  if (st.uid !== uid)
    throw new UnsafeDirError(
      `${path} is owned by uid ${st.uid}, not ${owner}: chown ${owner} ${path} and chmod 0700 ${path}`,
    );
  if ((st.mode & 0o022) !== 0)
    throw new UnsafeDirError(`${path} is writable by group or others (mode ${modeText(st)}): chmod 0700 ${path}`);
  for (let dir = realpathSync(dirname(path)); ; dir = dirname(dir)) {
    const parent = statSync(dir);
    if (parent.uid !== 0 && parent.uid !== uid)
      throw new UnsafeDirError(
        `${path}: its parent ${dir} is owned by uid ${parent.uid}, who could replace it: ` +
          `use a directory under a parent owned by ${owner}`,
      );
    const othersWrite = (parent.mode & 0o002) !== 0 || ((parent.mode & 0o020) !== 0 && parent.gid !== 0);
    if (othersWrite && (parent.mode & S_ISVTX) === 0)
      throw new UnsafeDirError(
        `${path}: its parent ${dir} is writable by others without the sticky bit ` +
          `(mode ${modeText(parent)}): chmod go-w ${dir}`,
      );
    if (dir === '/') break;
  }
  return 'ok';
}

/** Why no file can be written into `dir` as checkPrivateDir asks (missing, not a directory, others may write it…). */
export function privateDirProblem(dir: string): string | undefined {
  try {
    return checkPrivateDir(dir) === 'missing' ? `${dir} does not exist` : undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Why stateDir cannot be used, in one line that names the fix when there is one. */
export function stateDirProblem(stateDir: string, err: unknown): string {
  if (err instanceof UnsafeDirError) return `unsafe stateDir: ${err.message}`;
  const shown = stateDir.length > 200 ? `${stateDir.slice(0, 200)}… (${stateDir.length} characters)` : stateDir;
  const message = err instanceof Error ? err.message : String(err);
  const why = message.length > 300 ? `${message.slice(0, 300)}…` : message;
  return `cannot use stateDir ${shown}: ${why}`;
}

/** Creates `path` (and missing parents) with mode 0700 if needed, then checks it as checkPrivateDir does. */
export function ensurePrivateDir(path: string): void {
  if (checkPrivateDir(path) === 'ok') return;
  ensureDir(path, 0o700);
  checkPrivateDir(path);
}

/**
 * mkdir -p with `mode` for the directories it creates. Node 20's recursive
 * mkdirSync loops forever when mkdir(2) keeps answering ENOENT under a parent
 * that exists (procfs, sysfs); this walk stops at the first real error.
 */
export function ensureDir(path: string, mode: number): void {
  try {
    mkdirSync(path, { mode });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    const parent = dirname(path);
    if (code !== 'ENOENT' || parent === path) throw err;
    ensureDir(parent, mode);
    attempt(() => mkdirSync(path, { mode }), 'EEXIST');
  }
}

function modeText(st: Stats): string {
  return (st.mode & 0o7777).toString(8).padStart(4, '0');
}
