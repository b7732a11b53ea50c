// An fd a child must not inherit: a dup() of an fd on a fresh marker file has
// no FD_CLOEXEC, so exec alone would pass it on.
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import koffi from 'koffi';

const dup = koffi.load('libc.so.6').func('int dup(int fd)');

/** An fd without FD_CLOEXEC on a marker file; `close()` closes it and removes the file. */
export interface LeakyFd {
  fd: number;
  /** The marker file it is open on (what /proc/PID/fd/N of a child that inherited it points at). */
  file: string;
  close(): void;
}

/** Opens a LeakyFd on a marker file in a fresh temporary directory named after `prefix`. */
export function openLeakyFd(prefix: string): LeakyFd {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const file = join(dir, 'marker');
  const opened = openSync(file, 'w');
  const fd = dup(opened) as number;
  closeSync(opened);
  return {
    fd,
    file,
    close() {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
