// Pure: the background announcer's counters, and their Prometheus text form
// for node_exporter's textfile collector.
import type { FrameCounts } from '../announce/round';

/** How deferred waits ended. */
export interface DeferredCounts {
  started: number;
  ready: number;
  timedOut: number;
  gone: number;
}

/** Everything counted since the background announcer started. */
export interface Counters {
  frames: FrameCounts;
  rounds: { sent: number; skippedNotReady: number; skippedLate: number };
  deferred: DeferredCounts;
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
  counters.frames.garpRequest += sent.garpRequest;
  counters.frames.garpReply += sent.garpReply;
  counters.frames.na += sent.na;
}

const PREFIX = 'cni_announcer';

/** The counters in the Prometheus text exposition format (version 0.0.4). */
export function prometheusText(c: Counters): string {
  const out: string[] = [];
  const metric = (name: string, help: string, samples: [Record<string, string>, number][]): void => {
    out.push(`# HELP ${PREFIX}_${name} ${help}`, `# TYPE ${PREFIX}_${name} counter`);
    for (const [labels, value] of samples) {
      const text = Object.entries(labels)
        .map(([k, v]) => `${k}="${v}"`)
        .join(',');
      out.push(`${PREFIX}_${name}${text ? `{${text}}` : ''} ${value}`);
    }
  };
  metric('frames_sent_total', 'Announcement frames sent, by kind.', [
    [{ kind: 'garp_request' }, c.frames.garpRequest],
    [{ kind: 'garp_reply' }, c.frames.garpReply],
    [{ kind: 'na' }, c.frames.na],
  ]);
  metric('rounds_total', 'Announcement rounds, by outcome.', [
    [{ outcome: 'sent' }, c.rounds.sent],
    [{ outcome: 'skipped_not_ready' }, c.rounds.skippedNotReady],
    [{ outcome: 'skipped_late' }, c.rounds.skippedLate],
  ]);
  metric('deferred_waits_total', 'Waits for a pod that was not ready during ADD, by how they ended.', [
    [{ outcome: 'started' }, c.deferred.started],
    [{ outcome: 'ready' }, c.deferred.ready],
    [{ outcome: 'timed_out' }, c.deferred.timedOut],
    [{ outcome: 'gone' }, c.deferred.gone],
  ]);
  metric('rate_limited_rounds_total', 'Rounds held back by the node-wide rate limit.', [
    [{ outcome: 'delayed' }, c.rateLimited.delayed],
    [{ outcome: 'dropped' }, c.rateLimited.dropped],
  ]);
  metric('address_conflicts_total', 'IPv4 addresses not announced because another host uses them (conflictCheck).', [[{}, c.conflicts]]);
  metric('errors_total', 'Errors of the background announcer.', [[{}, c.errors]]);
  return `${out.join('\n')}\n`;
}
