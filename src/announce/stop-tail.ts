import type { Timers } from './timers';
import { isSameProcess, signalProcess, type ProcessId } from '../sys/processes';

const TERM_GRACE_MS = 1000;
const POLL_MS = 10;

/** Stops a recorded background tail (never a recycled pid): SIGTERM, then SIGKILL after a grace period. */
export async function stopTail(tail: ProcessId, timers: Timers): Promise<void> {
  if (!signalProcess(tail, 'SIGTERM')) return;
  const deadline = timers.now() + TERM_GRACE_MS;
  while (isSameProcess(tail)) {
    if (timers.now() >= deadline) {
      signalProcess(tail, 'SIGKILL');
      return;
    }
    await timers.sleep(POLL_MS);
  }
}
