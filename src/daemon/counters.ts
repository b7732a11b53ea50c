// Pure: the background announcer's counters, as `announcer status` shows them
// (src/daemon/metrics.ts gives them to Prometheus).
import type { FrameCounts } from '../announce/round';

/** Everything counted since the background announcer started. */
export interface Counters {
  frames: FrameCounts;
  rounds: { sent: number; skippedNotReady: number; skippedLate: number };
  /** How deferred waits ended. */
  deferred: { started: number; ready: number; timedOut: number; gone: number };
  rateLimited: { delayed: number; dropped: number };
  /** IPv4 addresses left unannounced because another host answered for them (conflictCheck). */
  conflicts: number;
  errors: number;
}

/** All zero. */
export function newCounters(): Counters {
  return {
    frames: { garpRequest: 0, garpReply: 0, na: 0 },
    rounds: { sent: 0, skippedNotReady: 0, skippedLate: 0 },
    deferred: { started: 0, ready: 0, timedOut: 0, gone: 0 },
    rateLimited: { delayed: 0, dropped: 0 },
    conflicts: 0,
    errors: 0,
  };
}

/** Adds `sent` to the frame counters. */
export function addFrames(counters: Counters, sent: FrameCounts): void {
  for (const kind of ['garpRequest', 'garpReply', 'na'] as const) counters.frames[kind] += sent[kind];
}
