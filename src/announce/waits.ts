// Waiting on fds, injected: ADD runs in the CNI process, where a wait may
// block, and inside the announcer's single-threaded poll loop, where it must
// not (the loop registers the fds and the deadline and resolves the wait).
import type { Libc } from '../sys/libc';

/** Awaitable waits on fds: ADD waits for nothing else (sleeping is timers.sleep). */
export interface Waits {
  /** Resolves once one of `fds` is readable or `ms` have passed; rejects only when the wait itself fails. */
  readable(fds: readonly number[], ms: number): Promise<void>;
}

/** The CNI process's waits: poll(2), blocking the process, then an already resolved promise. */
export function blockingWaits(libc: Pick<Libc, 'pollIn'>): Waits {
  return {
    readable: async (fds, ms) => void libc.pollIn(fds, ms),
  };
}
