// ADD's conflict check before round 1 (conflictCheck warn or fail): one probe
// window (SteppedPodProbe, the announcer's mechanism too), stepped between
// awaited waits so that ADD never blocks the process that runs it.
import type { AddressConflict, ProbeSettings } from './conflict-probe';
import { describeConflict, withoutConflicts } from './conflict-probe';
import { AddressConflictError } from './errors';
import { SteppedPodProbe, type PodProbeDeps } from './probe-pod';
import type { OutgoingFrame } from './round';
import type { PodSession } from './session';
import type { ConflictCheckJob } from './background-job';
import type { Waits } from './waits';

/** What ADD's probe needs: the pod probe's deps and a wait on its receivers. */
export interface AddProbeDeps extends PodProbeDeps {
  waits: Waits;
}

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
export async function checkConflictsOnAdd(
  deps: AddProbeDeps,
  session: PodSession,
  netns: string,
  frames: readonly OutgoingFrame[],
  check: ConflictCheckJob,
): Promise<CheckedRound> {
  let conflicts: AddressConflict[];
  try {
    conflicts = await probeWindow(deps, session, netns, frames, check, check.action === 'fail');
  } catch (err) {
    if (check.action === 'fail') throw err;
    deps.log.error('conflict probe failed: announcing without it', { error: err });
    return { frames: [...frames], conflicts: [] };
  }
  if (conflicts.length === 0) return { frames: [...frames], conflicts };
  if (check.action === 'fail') throw new AddressConflictError(conflicts);
  for (const c of conflicts) {
    deps.log.warn(`address conflict: not announcing ${describeConflict(c)}`, {
      address: c.address,
      mac: c.mac,
      interface: c.interface,
    });
  }
  return { frames: withoutConflicts(frames, conflicts), conflicts };
}

/**
 * Steps one window to its end, waiting on its receivers (or for its next probe) between steps; the receivers are
 * released whatever happens.
 */
async function probeWindow(
  deps: AddProbeDeps,
  session: PodSession,
  netns: string,
  frames: readonly OutgoingFrame[],
  settings: ProbeSettings,
  stopAtFirst: boolean,
): Promise<AddressConflict[]> {
  const probe = SteppedPodProbe.start(deps, session, netns, frames, settings, deps.timers.now(), stopAtFirst);
  if (!probe) return [];
  try {
    for (;;) {
      const now = deps.timers.now();
      if (probe.step(now)) return probe.finish();
      await deps.waits.readable(probe.fds(), probe.wakeAt(now) - now);
    }
  } finally {
    probe.close();
  }
}
