// The per-attachment lock: ADD and DEL of one attachment (and GC's removal of
// it) never overlap. Without it, a DEL that arrives while ADD still waits for
// readiness finds no record and returns, and ADD then hands background work
// over for an attachment that no longer exists; two ADDs each hand a job over
// and only one is recorded. The announcer holds the locks in memory
// (src/daemon/memory-locks.ts), keyed by the path `<name>.lock` next to the record; no file is made.
import { join } from '../path';
import { lockName } from '../state-files';

/** An attachment's lock, held until released. */
export interface HeldLock {
  readonly path: string;
  /** Hands the lock to the next waiter; a second call does nothing. Never throws. */
  release(): void;
}

/** Takes the lock named by `path` within `timeoutMs`; undefined when it stays held that long. */
export type LockFile = (path: string, timeoutMs: number) => Promise<HeldLock | undefined>;

/**
 * How long a command waits for the attachment's lock beyond `addWaitMs`, the
 * longest an ADD holding it waits for readiness. ADD's other steps take
 * milliseconds, or up to 2 s (the conflict probe), and round 1's wait for the
 * node-wide rate limit ends half this grace before a waiter gives up. After
 * round 1, gatewayCheck require asks for up to gatewayCheckMs (10 s at most):
 * past half this grace, a waiter may give up on an ADD that is not stuck.
 * Without it, only a stuck ADD holds the lock longer.
 */
export const LOCK_GRACE_MS = 10_000;

/** How long ADD and DEL wait for the lock of an attachment. */
export function lockWaitMs(addWaitMs: number): number {
  return addWaitMs + LOCK_GRACE_MS;
}

/** The key of an attachment's lock (the path an older version's lock file had). */
export function lockPath(stateDir: string, containerId: string, ifname: string): string {
  return join(stateDir, lockName(containerId, ifname));
}
