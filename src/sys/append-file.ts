// Appends to a log file without ever blocking or writing through something that is not a plain
// file: a FIFO with no reader would hang the command forever (open(2) O_WRONLY waits for one),
// and a device or a planted symlink must not receive our lines.
import { closeSync, fstatSync, lstatSync, openSync, writeSync } from 'node:fs';
import { ABI } from './abi/kernel-abi';
import { EINVAL, SysError, sysErrorFrom } from './sys-error';

const { O_APPEND, O_CREAT, O_NOCTTY, O_NOFOLLOW, O_NONBLOCK, O_WRONLY } = ABI;

/**
 * Appends `data` to the regular file at `path`, creating it with mode 0600. Throws SysError
 * without opening it when the path is a symlink, FIFO, socket, device or directory (EINVAL).
 * A path that becomes one between that check and the open is caught by O_NOFOLLOW, O_NONBLOCK
 * (no wait for a FIFO's reader) and fstat, and closed unwritten.
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
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off);
  } catch (err) {
    throw sysErrorFrom(`write ${path}`, err);
  } finally {
    closeSync(fd);
  }
}
