// Files in directories the plugin owns, written and read without ever following a link someone
// planted, blocking on a FIFO, or leaving half a file behind: small records replaced atomically
// and read back bounded (the state records), lines appended to a log, and the executable
// installed where a runtime may exec it at any moment. Node and Bun open every file O_CLOEXEC,
// so no descriptor opened here reaches a spawned process.
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
import { join } from '../path';
import { tempName } from '../state-files';
import { ABI } from './abi/kernel-abi';
import { EINVAL, attempt, SysError, sysErrorFrom } from './sys-error';

const { O_APPEND, O_CREAT, O_DIRECTORY, O_EXCL, O_NOCTTY, O_NOFOLLOW, O_NONBLOCK, O_RDONLY, O_WRONLY } = ABI;

/** A file that is there but is not a small regular file (a FIFO, a directory, too large…). */
export class NotRegularFileError extends Error {
  override name = 'NotRegularFileError';
}

/** n random bytes as hex (Web Crypto: node:crypto would load on every plugin start). */
function randomHex(n: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(n))).toString('hex');
}

/** close(2) of `fd` when there is one, a failure ignored: nothing more is read or written through it. */
function closeQuietly(fd: number | undefined): void {
  if (fd !== undefined) attempt(() => closeSync(fd));
}

/** Writes the first `length` bytes of `bytes` to `fd`, looping over short writes. */
function writeAll(fd: number, bytes: Uint8Array, length = bytes.length): void {
  for (let off = 0; off < length; ) off += writeSync(fd, bytes, off, length - off);
}

/** unlink(2) that treats a missing file as done; other errors throw. */
export function unlinkIfPresent(path: string): void {
  attempt(() => unlinkSync(path), 'ENOENT');
}

/** The temporary name next to `name` in `dir`: hidden, unique per process and call, ending `.tmp`. */
export function tempNameFor(name: string): string {
  return tempName(name, process.pid, randomHex(4));
}

/**
 * Puts a new file at `target` atomically: the temporary file `tmp`, next to it, is created with
 * O_CREAT|O_EXCL|O_NOFOLLOW and `mode` (so a planted file or symlink of that name is never opened,
 * let alone truncated), filled by `fill`, then renamed over `target`. On any failure (ENOSPC,
 * EDQUOT, EIO…) `tmp` is removed before the error is rethrown, so nothing is left behind.
 */
function renameIntoPlace(tmp: string, target: string, mode: number, fill: (fd: number) => void): void {
  let fd: number | undefined = openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
  try {
    fill(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, target);
  } catch (err) {
    closeQuietly(fd);
    attempt(() => unlinkSync(tmp)); // whatever befalls it, the original error is the one to report
    throw err;
  }
}

/** Replaces `dir/name` with `data` atomically (see renameIntoPlace), through a temporary name of tempNameFor's. */
export function replaceFile(dir: string, name: string, data: string, mode = 0o600): string {
  const target = join(dir, name);
  renameIntoPlace(join(dir, tempNameFor(name)), target, mode, (fd) => writeAll(fd, Buffer.from(data)));
  return target;
}

/**
 * Reads a regular file of at most `maxBytes` (O_NOFOLLOW, O_NONBLOCK then fstat); undefined when absent,
 * NotRegularFileError otherwise, or when `ownerUid` is given and the file is not that uid's or others may write it.
 */
export function readSmallFile(path: string, maxBytes: number, ownerUid?: number): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw new NotRegularFileError(`${path} is a symbolic link`, { cause: err });
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new NotRegularFileError(`${path} is not a regular file`);
    if (st.size > maxBytes) throw new NotRegularFileError(`${path} is larger than ${maxBytes} bytes`);
    if (ownerUid !== undefined && (st.uid !== ownerUid || (st.mode & 0o022) !== 0))
      throw new NotRegularFileError(`${path} must be uid ${ownerUid}'s and writable by it alone`);
    const buf = Buffer.alloc(maxBytes + 1);
    const got = readFull(fd, buf, 0);
    if (got > maxBytes) throw new NotRegularFileError(`${path} is larger than ${maxBytes} bytes`);
    return buf.subarray(0, got).toString('utf8');
  } finally {
    closeQuietly(fd);
  }
}

/**
 * Appends `data` to the regular file at `path` (a log), creating it with mode 0600, never blocking
 * or writing through something that is not a plain file: a FIFO with no reader would hang the
 * command (open(2) O_WRONLY waits for one), and a device or a planted symlink must not receive our
 * lines. Throws SysError without opening it when the path is a symlink, FIFO, socket, device or
 * directory (EINVAL). A path that becomes one between that check and the open is caught by
 * O_NOFOLLOW, O_NONBLOCK (no wait for a FIFO's reader) and fstat, and closed unwritten.
 */
export function appendToRegularFile(path: string, data: string | Uint8Array): void {
  try {
    if (!lstatSync(path).isFile()) throw new SysError(`append ${path}: not a regular file`, EINVAL);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw sysErrorFrom(`lstat ${path}`, err);
  }
  let fd: number;
  try {
    fd = openSync(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0o600);
  } catch (err) {
    throw sysErrorFrom(`open ${path}`, err);
  }
  try {
    if (!fstatSync(fd).isFile()) throw new SysError(`append ${path}: not a regular file`, EINVAL);
    writeAll(fd, typeof data === 'string' ? Buffer.from(data) : data);
  } catch (err) {
    throw sysErrorFrom(`write ${path}`, err);
  } finally {
    closeSync(fd);
  }
}

/** What installFile did. */
export type InstallOutcome = 'installed' | 'unchanged';

/** Why a destination directory cannot be used; undefined when it is a directory. */
export type DirProblem = 'missing' | 'not a directory' | undefined;

const CHUNK = 1 << 20;

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

/** Whether `target` is a regular file (no symlink) with `mode` and the bytes of the open `src` of `size` bytes. */
function sameContent(src: number, size: number, target: string, mode: number): boolean {
  const fd = attempt(() => openSync(target, O_RDONLY | O_NOFOLLOW));
  if (fd === undefined) return false; // missing, a symlink (ELOOP), unreadable: replace it
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size !== size || (st.mode & 0o7777) !== mode) return false;
    const a = Buffer.allocUnsafe(CHUNK);
    const b = Buffer.allocUnsafe(CHUNK);
    for (let pos = 0; pos < size; pos += CHUNK) {
      const n = readFull(src, a, pos);
      if (n !== readFull(fd, b, pos) || !a.subarray(0, n).equals(b.subarray(0, n))) return false;
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
 * Installs a copy of `source` (its size when opened) as `dir/name` with `mode`, atomically, so that a runtime may exec
 * it at any moment (kubelet and runtimes exec /opt/cni/bin/* whenever a pod starts: a plain copy in place could be
 * exec'd half-written, or fail with ETXTBSY while the old binary runs). A temporary `dir/.name.tmp-*` (see
 * renameIntoPlace) is written, chmod'ed, fsync'd and renamed over `dir/name`, then `dir` is fsync'd. A reader sees the
 * old file or the new one, never a part. Does nothing when `dir/name` already is a regular file with those bytes and
 * mode. On failure the error (with its errno code) is thrown.
 */
export function installFile(source: string, dir: string, name: string, mode: number): InstallOutcome {
  const src = openSync(source, O_RDONLY);
  try {
    const size = fstatSync(src).size;
    const target = join(dir, name);
    if (sameContent(src, size, target, mode)) return 'unchanged';
    renameIntoPlace(join(dir, `.${name}.tmp-${randomHex(6)}`), target, 0o600, (out) => {
      const buf = Buffer.allocUnsafe(CHUNK);
      for (let pos = 0; pos < size; pos += CHUNK) writeAll(out, buf, readFull(src, buf, pos));
      fchmodSync(out, mode);
      fsyncSync(out);
    });
    fsyncDir(dir);
    return 'installed';
  } finally {
    closeSync(src);
  }
}
