// The announcer's socket address for connect(2). sockaddr_un holds 107 bytes of path: a longer
// stateDir is reached through an O_PATH fd of it, /proc/self/fd/N/announcer.sock, held open
// until the connect has settled.
import { join } from '../path';
import { ABI } from '../sys/abi/kernel-abi';
import { ANNOUNCER_SOCKET } from '../state-files';

/** The longest path sockaddr_un takes (108 bytes with the NUL). */
const SUN_PATH_MAX = 107;

/** Runs `use` with the socket's address in stateDir; a long one's fd is closed once `use` settles. */
export async function withAnnouncerAddress<T>(stateDir: string, use: (address: string) => Promise<T>): Promise<T> {
  const direct = join(stateDir, ANNOUNCER_SOCKET);
  if (Buffer.byteLength(direct) <= SUN_PATH_MAX) return use(direct);
  // node:fs only here: a run with the usual short stateDir never loads it.
  const { closeSync, openSync } = await import('node:fs');
  const dir = openSync(stateDir, ABI.O_PATH | ABI.O_DIRECTORY | ABI.O_NOFOLLOW);
  try {
    return await use(`/proc/self/fd/${dir}/${ANNOUNCER_SOCKET}`);
  } finally {
    closeSync(dir);
  }
}
