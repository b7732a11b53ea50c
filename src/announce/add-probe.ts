// ADD's conflict check before round 1 (conflictCheck warn or fail).
import { describeConflict, withoutConflicts, type AddressConflict } from './conflict-probe';
import { AddressConflictError } from './errors';
import { probePod, type PodProbeDeps } from './probe-pod';
import type { OutgoingFrame } from './round';
import type { PodSession } from './session';
import type { ConflictCheckJob } from './background-job';

/** What the check leaves to send, and the addresses it left out. */
export interface CheckedRound {
  frames: OutgoingFrame[];
  conflicts: AddressConflict[];
}

/**
 * Probes the IPv4 addresses of round 1 (`frames`) before they are announced.
 * - fail: the first conflict ends the window and fails ADD (AddressConflictError,
 *   naming the address, the other host's MAC and the interface). Nothing is sent.
 * - warn: each conflicting address is logged and left out; the rest is sent.
 * A probe that cannot run fails ADD under fail (with its own error) and is
 * logged under warn, where the round goes out unprobed.
 */
export function checkConflictsOnAdd(
  deps: PodProbeDeps,
  session: PodSession,
  netns: string,
  frames: readonly OutgoingFrame[],
  check: ConflictCheckJob,
): CheckedRound {
  let conflicts: AddressConflict[];
  try {
    conflicts = probePod(deps, session, netns, frames, check, check.action === 'fail');
  } catch (err) {
    if (check.action === 'fail') throw err;
    deps.log.error('conflict probe failed: announcing without it', { error: err });
    return { frames: [...frames], conflicts: [] };
  }
  if (conflicts.length === 0) return { frames: [...frames], conflicts };
  if (check.action === 'fail') throw new AddressConflictError(conflicts);
  for (const c of conflicts) {
    deps.log.warn(`address conflict: not announcing ${describeConflict(c)}`, { address: c.address, mac: c.mac, interface: c.interface });
  }
  return { frames: withoutConflicts(frames, conflicts), conflicts };
}
