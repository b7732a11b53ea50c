// Which process holds the announcer's lock of a stateDir, for a failure's message: /proc/locks
// names each lock's holder by the locked file's device and inode. Read only on the failure
// path; without FFI (SO_PEERCRED of the shim's own socket would need it).
import { readFile, stat } from 'node:fs/promises';
import { join } from '../path';
import { DAEMON_LOCK } from '../state-files';
import { flockHolder } from '../sys/lock-holder';

/** The pid holding stateDir's announcer lock; undefined when none does or it cannot be known. */
export async function announcerPid(stateDir: string): Promise<number | undefined> {
  const file = await stat(join(stateDir, DAEMON_LOCK), { bigint: true });
  return flockHolder(await readFile('/proc/locks', 'utf8'), file.dev, file.ino);
}
