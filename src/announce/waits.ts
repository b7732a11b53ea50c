// Waiting on fds, injected: ADD runs inside the announcer's single-threaded
// poll loop, where a wait must not block (the loop registers the fds and the
// deadline and resolves the wait); `announcer announce`, alone in its process,
// may block.
import type { Libc } from '../sys/libc';

/** Awaitable waits on fds: ADD waits for nothing else (sleeping is timers.sleep). */
export interface Waits {
  /** Resolves once one of `fds` is readable or `ms` have passed; rejects only when the wait itself fails. */
  readable(fds: readonly number[], ms: number): Promise<void>;
}

/** `announcer announce`'s waits: poll(2), blocking the process, then an already resolved promise. */
export function blockingWaits(libc: Pick<Libc, 'pollIn'>): Waits {
  return {
    readable: async (fds, ms) => void libc.pollIn(fds, ms),
  };
}
