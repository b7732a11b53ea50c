// Appends to a log file without ever blocking or writing through something that is not a plain
// file: a FIFO with no reader would hang the command forever (open(2) O_WRONLY waits for one),
// and a device or a planted symlink must not receive our lines.
import { closeSync, constants, fstatSync, lstatSync, openSync, writeSync } from 'node:fs';
import { EINVAL, EIO, errnoNumber } from './errno';
import { SysError } from './sys-error';

const { O_APPEND, O_CREAT, O_NOCTTY, O_NOFOLLOW, O_NONBLOCK, O_WRONLY } = constants;

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
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw asSysError(err, `lstat ${path}`);
  }
  let fd: number;
  try {
    fd = openSync(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0o600);
  } catch (err) {
    throw asSysError(err, `open ${path}`);
  }
  try {
    if (!fstatSync(fd).isFile()) throw new SysError(`append ${path}: not a regular file`, EINVAL);
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off);
  } catch (err) {
    throw asSysError(err, `write ${path}`);
  } finally {
    closeSync(fd);
  }
}

function asSysError(err: unknown, operation: string): SysError {
  if (err instanceof SysError) return err;
  const code = (err as NodeJS.ErrnoException).code;
  const errno = code === undefined ? undefined : errnoNumber(code);
  return new SysError(operation, errno ?? EIO, { cause: err });
}
