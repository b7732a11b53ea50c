// The announcer's progress stamp: the mtime of its lock file, set through the
// fd it holds the lock on (futimens(2), as Node's futimes does), so a caller can
// tell a hung announcer from a busy one (src/shim/replace-hung.ts).
import { futimesSync } from 'node:fs';

/** Sets the access and modification times of the file open on `fd` to `nowMs` (wall-clock ms); throws its errno. */
export function stampFd(fd: number, nowMs: number): void {
  const seconds = nowMs / 1000;
  futimesSync(fd, seconds, seconds);
}
