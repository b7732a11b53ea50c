// Copies one file into a directory the way a runtime may safely exec it at any
// moment: a new file in the same directory, filled and fsync'd, then renamed
// over the old name. kubelet and runtimes exec /opt/cni/bin/* whenever a pod
// starts, so a plain copy in place could be exec'd half-written (or fail with
// ETXTBSY while the old binary runs). Node and Bun open every file O_CLOEXEC.
import {
  closeSync,
  fchmodSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { ABI } from './abi/kernel-abi';
import { join } from '../path';

const { O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_RDONLY, O_WRONLY } = ABI;

/** What installFile did. */
export type InstallOutcome = 'installed' | 'unchanged';

/** Why a destination directory cannot be used; undefined when it is a directory. */
export type DirProblem = 'missing' | 'not a directory' | undefined;

const CHUNK = 1 << 20;

/** n random bytes as hex (Web Crypto: node:crypto would load on every plugin start). */
function randomHex(n: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(n))).toString('hex');
}

/** Whether `dir` (symlinks followed) is a directory; other errors (EACCES…) throw. */
export function dirProblem(dir: string): DirProblem {
  try {
    return statSync(dir).isDirectory() ? undefined : 'not a directory';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'missing';
    if (code === 'ENOTDIR') return 'not a directory';
    throw err;
  }
}

/** Reads up to buf.length bytes at `pos`, looping over short reads; fewer only at end of file. */
function readFull(fd: number, buf: Buffer, pos: number): number {
  let got = 0;
  while (got < buf.length) {
    const n = readSync(fd, buf, got, buf.length - got, pos + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}

function writeAll(fd: number, buf: Buffer, length: number): void {
  for (let off = 0; off < length; ) off += writeSync(fd, buf, off, length - off);
}

function closeQuietly(fd: number | undefined): void {
  if (fd === undefined) return;
  try {
    closeSync(fd);
  } catch {
    // Nothing was written through it that matters any more.
  }
}

/** Whether `target` is a regular file (no symlink) with `mode` and the bytes of the open `src` of `size` bytes. */
function sameFile(src: number, size: number, target: string, mode: number): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(target, O_RDONLY | O_NOFOLLOW);
  } catch {
    return false; // missing, a symlink (ELOOP), unreadable: replace it
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size !== size || (st.mode & 0o7777) !== mode) return false;
    const a = Buffer.allocUnsafe(CHUNK);
    const b = Buffer.allocUnsafe(CHUNK);
    for (let pos = 0; pos < size; pos += CHUNK) {
      const n = readFull(src, a, pos);
      if (n !== readFull(fd, b, pos) || !a.subarray(0, n).equals(b.subarray(0, n))) return false;
      if (n < CHUNK) break;
    }
    return true;
  } finally {
    closeQuietly(fd);
  }
}

/** fsync(2) on a directory, so that a rename in it survives a crash. */
function fsyncDir(dir: string): void {
  const fd = openSync(dir, O_RDONLY | O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The name of a temporary file for `name`: `.name.tmp-` and 12 hex digits. */
export function isTempName(entry: string, name: string): boolean {
  return entry.startsWith(`.${name}.tmp-`) && /^[0-9a-f]{12}$/.test(entry.slice(name.length + 6));
}

/**
 * Removes and returns installFile's temporary files of `name` older than `maxAgeMs`: left by a killed installer (a
 * younger one may be at work).
 */
export function removeStaleTemps(dir: string, name: string, maxAgeMs: number, nowMs: number): string[] {
  const removed: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (!isTempName(entry, name)) continue;
    const path = join(dir, entry);
    try {
      const st = lstatSync(path);
      if (!st.isFile() || nowMs - st.mtimeMs <= maxAgeMs) continue;
      unlinkSync(path);
      removed.push(entry);
    } catch {
      // Gone meanwhile: nothing to remove.
    }
  }
  return removed;
}

/**
 * Installs a copy of `source` as `dir/name` with `mode`, atomically: a
 * temporary `dir/.name.tmp-*` (O_EXCL|O_NOFOLLOW, so nothing planted there is
 * followed or reused) is written, chmod'ed, fsync'd and renamed over
 * `dir/name`, then `dir` is fsync'd. A reader sees the old file or the new
 * one, never a part. Does nothing when `dir/name` already is a regular file
 * with those bytes and mode. On failure the temporary file is removed and the
 * error (with its errno code) is thrown.
 */
export function installFile(source: string, dir: string, name: string, mode: number): InstallOutcome {
  const src = openSync(source, O_RDONLY);
  try {
    const size = fstatSync(src).size;
    const target = join(dir, name);
    if (sameFile(src, size, target, mode)) return 'unchanged';

    const tmp = join(dir, `.${name}.tmp-${randomHex(6)}`);
    const flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
    let out: number | undefined = openSync(tmp, flags, 0o600);
    let renamed = false;
    try {
      const buf = Buffer.allocUnsafe(CHUNK);
      for (let pos = 0; ; pos += CHUNK) {
        const n = readFull(src, buf, pos);
        writeAll(out, buf, n);
        if (n < CHUNK) break;
      }
      fchmodSync(out, mode);
      fsyncSync(out);
      closeSync(out);
      out = undefined;
      renameSync(tmp, target);
      renamed = true;
    } finally {
      if (!renamed) {
        closeQuietly(out);
        try {
          unlinkSync(tmp);
        } catch {
          // Already gone.
        }
      }
    }
    fsyncDir(dir);
    return 'installed';
  } finally {
    closeSync(src);
  }
}
