import type { Timers } from './timers';
import { isSameProcess, signalProcess, type ProcessId } from '../sys/processes';

const TERM_GRACE_MS = 1000;
const POLL_MS = 10;

/** What stopTail did: nothing (no such process any more), SIGTERM was enough, or SIGKILL was needed. */
export type StopOutcome = 'not-running' | 'terminated' | 'killed';

/**
 * Stops a recorded background tail (never a recycled pid, never pid ≤ 1: see
 * signalProcess): SIGTERM, then SIGKILL after a grace period.
 */
export async function stopTail(tail: ProcessId, timers: Timers): Promise<StopOutcome> {
  if (!signalProcess(tail, 'SIGTERM')) return 'not-running';
  const deadline = timers.now() + TERM_GRACE_MS;
  while (isSameProcess(tail)) {
    if (timers.now() >= deadline) {
      signalProcess(tail, 'SIGKILL');
      return 'killed';
    }
    await timers.sleep(POLL_MS);
  }
  return 'terminated';
}
