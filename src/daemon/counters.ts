// Pure: the background announcer's counters, and their Prometheus text form
// for node_exporter's textfile collector.
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

const PREFIX = 'cni_announcer';

/** The counters in the Prometheus text exposition format (version 0.0.4). */
export function prometheusText(c: Counters): string {
  const out: string[] = [];
  // One sample per field of `counts` (in newCounters' order), labelled `label="field_in_snake_case"`; none for a plain count.
  const metric = (name: string, help: string, label: string, counts: number | object): void => {
    out.push(`# HELP ${PREFIX}_${name} ${help}`, `# TYPE ${PREFIX}_${name} counter`);
    if (typeof counts === 'number') out.push(`${PREFIX}_${name} ${counts}`);
    else for (const [k, v] of Object.entries(counts)) out.push(`${PREFIX}_${name}{${label}="${k.replace(/[A-Z]/g, (m) => `_${m.toLowerCase()}`)}"} ${v}`);
  };
  metric('frames_sent_total', 'Announcement frames sent, by kind.', 'kind', c.frames);
  metric('rounds_total', 'Announcement rounds, by outcome.', 'outcome', c.rounds);
  metric('deferred_waits_total', 'Waits for a pod that was not ready during ADD, by how they ended.', 'outcome', c.deferred);
  metric('rate_limited_rounds_total', 'Rounds held back by the node-wide rate limit.', 'outcome', c.rateLimited);
  metric('address_conflicts_total', 'IPv4 addresses not announced because another host uses them (conflictCheck).', '', c.conflicts);
  metric('errors_total', 'Errors of the background announcer.', '', c.errors);
  return `${out.join('\n')}\n`;
}
