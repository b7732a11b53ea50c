// Which process holds the announcer's lock of a stateDir, for a failure's message: /proc/locks
// names each lock's holder by the locked file's device and inode. Read only on the failure
// path; without FFI (SO_PEERCRED of the shim's own socket would need it).
import { readFile, stat } from 'node:fs/promises';
import { join } from '../path';
import { DAEMON_LOCK } from '../state-files';

/** The pid holding a FLOCK on the file of device `dev` (st_dev) and inode `ino`, in /proc/locks's `text`. */
export function flockHolder(text: string, dev: number, ino: number): number | undefined {
  // /proc/locks prints the device as MAJOR:MINOR in hex (new_encode_dev's split).
  const major = Math.floor(dev / 256) % 4096;
  const minor = (dev % 256) + Math.floor(dev / 1048576) * 256;
  const id = `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}:${ino}`;
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    // `1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF`; a waiter's line has `->` after the number.
    if (fields[1] !== 'FLOCK' || fields[5] !== id) continue;
    const pid = Number(fields[4]);
    if (Number.isInteger(pid) && pid > 0) return pid;
  }
  return undefined;
}

/** The pid holding stateDir's announcer lock; undefined when none does or it cannot be known. */
export async function announcerPid(stateDir: string): Promise<number | undefined> {
  const file = await stat(join(stateDir, DAEMON_LOCK));
  return flockHolder(await readFile('/proc/locks', 'utf8'), file.dev, file.ino);
}
