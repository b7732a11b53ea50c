// The announcer's socket address and lifetime lock in stateDir (their names: src/state-files.ts).
import { openSync } from 'node:fs';
import { join } from '../path';
import { ABI } from '../sys/abi/kernel-abi';
import { withSocketAddress, type UnixSockets } from '../sys/unix-socket';
import { DAEMON_LOCK, RESIDENT_LOCK } from '../state-files';

const { O_CREAT, O_NOFOLLOW, O_RDWR } = ABI;

/** Opens (creating it 0600, never through a symlink) the lock file every announcer of `stateDir` takes. */
export function openDaemonLock(stateDir: string): number {
  return openSync(join(stateDir, DAEMON_LOCK), O_RDWR | O_CREAT | O_NOFOLLOW, 0o600);
}

/** Opens (as openDaemonLock) the lock file a resident announcer of `stateDir` holds for its whole life. */
export function openResidentLock(stateDir: string): number {
  return openSync(join(stateDir, RESIDENT_LOCK), O_RDWR | O_CREAT | O_NOFOLLOW, 0o600);
}

/** Whether an announcer accepts connections on stateDir's socket (the connection is closed at once). */
export function someoneListens(stateDir: string, sockets: Pick<UnixSockets, 'connect' | 'close'>): boolean {
  try {
    withSocketAddress(stateDir, (address) => sockets.close(sockets.connect(address)));
    return true;
  } catch {
    return false; // ENOENT, ECONNREFUSED: nobody listens
  }
}
