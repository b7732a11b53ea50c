// The per-attachment lock: ADD and DEL of one attachment (and GC's removal of
// it) never overlap. Without it, a DEL that arrives while ADD still waits for
// readiness finds no record and returns, and ADD then hands background work
// over for an attachment that no longer exists; two ADDs each hand a job over
// and only one is recorded. The announcer holds the locks in memory
// (src/daemon/memory-locks.ts), keyed by the path `<name>.lock` next to the record; no file is made.
import { join } from '../path';
import { MAX_GATEWAY_CHECK_MS, MAX_PROBE_MS } from '../cni/option-bounds';
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
 * What a command waits for the attachment's lock beyond the longest an ADD holding it may work: `addWaitMs` for
 * readiness, then the conflict probe and gatewayCheck require's wait, each at its largest. ADD's other steps take
 * milliseconds, and round 1's wait for the node-wide rate limit ends half this grace after `addWaitMs`. Only a stuck
 * ADD holds the lock longer.
 */
export const LOCK_GRACE_MS = 10_000;

/** How long ADD and DEL wait for the lock of an attachment: addWaitMs + 2 s + 10 s + LOCK_GRACE_MS. */
export function lockWaitMs(addWaitMs: number): number {
  return addWaitMs + MAX_PROBE_MS + MAX_GATEWAY_CHECK_MS + LOCK_GRACE_MS;
}

/** The key of an attachment's lock (the path an older version's lock file had). */
export function lockPath(stateDir: string, containerId: string, ifname: string): string {
  return join(stateDir, lockName(containerId, ifname));
}
