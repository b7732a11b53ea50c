// The announcer's socket address for the shim's connect(2): withSocketAddress (src/sys/unix-socket.ts),
// where a failed open of a long stateDir rejects, as a failed connect does.
import { withSocketAddress } from '../sys/unix-socket';

/** Runs `use` with the socket's address in stateDir; a long one's fd is closed once `use` settles. */
export async function withAnnouncerAddress<T>(stateDir: string, use: (address: string) => Promise<T>): Promise<T> {
  return withSocketAddress(stateDir, use);
}
