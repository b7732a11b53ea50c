// Small files in a directory the plugin owns (the state records), written and
// read without ever following a link someone planted, blocking on a FIFO, or
// leaving a half-written temporary file behind. Node and Bun open every file
// O_CLOEXEC, so no descriptor opened here reaches a spawned process.
import { closeSync, fstatSync, openSync, readSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { ABI } from './abi/kernel-abi';
import { join } from '../path';
import { tempName } from '../state-files';

const { O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_RDONLY, O_WRONLY } = ABI;

/** A file that is there but is not a small regular file (a FIFO, a directory, too large…). */
export class NotRegularFileError extends Error {
  override name = 'NotRegularFileError';
}

/** n random bytes as hex (Web Crypto: node:crypto would load on every plugin start). */
function randomHex(n: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(n))).toString('hex');
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Nothing more is read or written through it.
  }
}

/** unlink(2) that treats a missing file as done; other errors throw. */
export function unlinkIfPresent(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** The temporary name next to `name` in `dir`: hidden, unique per process and call, ending `.tmp`. */
export function tempNameFor(name: string): string {
  return tempName(name, process.pid, randomHex(4));
}

/**
 * Replaces `dir/name` with `data` atomically: a new temporary file in `dir`
 * created with O_CREAT|O_EXCL|O_NOFOLLOW (so a planted file or symlink of that
 * name is never opened, let alone truncated), filled, then renamed over `name`.
 * On any failure (ENOSPC, EDQUOT, EIO…) the temporary file is removed before
 * the error is rethrown, so nothing is left behind.
 */
export function replaceFile(dir: string, name: string, data: string, mode = 0o600): string {
  const target = join(dir, name);
  const tmp = join(dir, tempNameFor(name));
  const fd = openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
  try {
    const bytes = Buffer.from(data);
    for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off, bytes.length - off);
    closeSync(fd);
    renameSync(tmp, target);
    return target;
  } catch (err) {
    closeQuietly(fd);
    try {
      unlinkIfPresent(tmp);
    } catch {
      // The original error is the one to report.
    }
    throw err;
  }
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
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, null);
      if (n === 0) break;
      got += n;
    }
    if (got > maxBytes) throw new NotRegularFileError(`${path} is larger than ${maxBytes} bytes`);
    return buf.subarray(0, got).toString('utf8');
  } finally {
    closeQuietly(fd);
  }
}
