// Closing an AF_PACKET socket waits for an RCU grace period (packet_release()
// calls synchronize_net(): 8–16 ms), and a process's exit waits for its last
// close of each file. Closing a copy that is not the last costs microseconds.
// So ADD hands its packet socket to a detached child of ours that keeps a copy
// until ADD has exited, and the wait happens off ADD's path, in that child.
import { readSync } from 'node:fs';
import type { Libc } from './libc';

/** The verb of the child that holds the copies. */
export const HOLD_FDS_VERB = 'hold-fds';

/** Starts the holder with `inherit` as its fds 3, 4, …; throws if it cannot. */
export type SpawnHolder = (inherit: readonly number[]) => void;

/** Closes `fds` here, leaving their last close to a holder child that outlives this process; false when none started (closed here, paying the wait). */
export function closeAfterExit(libc: Libc, spawnHolder: SpawnHolder, fds: readonly number[]): boolean {
  let readEnd: number | undefined;
  let held = false;
  try {
    // Our write end is never written and never inherited: the holder reads EOF when we exit.
    [readEnd] = libc.pipe();
    spawnHolder([readEnd, ...fds]);
    held = true;
  } catch {
    held = false;
  } finally {
    if (readEnd !== undefined) libc.close(readEnd);
    for (const fd of fds) libc.close(fd);
  }
  return held;
}

/** The holder's side: blocks until fd 3 reads EOF (its parent exited); exiting then closes the copies. */
export function holdUntilParentExits(): void {
  const byte = Buffer.alloc(1);
  try {
    while (readSync(3, byte, 0, 1, null) > 0);
  } catch {
    // fd 3 is not the pipe we expect: nothing to wait for
  }
}
