// The announcer's table of work as the commands it hosts see it (JobHost): a
// hosted ADD hands over the record it wrote and what its round 1 did, in
// memory; a hosted DEL or GC cancels a work. The records stay the journal: the
// table takes work from them only at start (job-record.ts).
import type { JobHost } from '../announce/job-host';
import { totalFrames } from '../announce/round';
import { addFrames, countVerdict, type Counters } from './counters';
import type { Jobs } from './jobs';
import type { LazyMetrics } from './lazy-metrics';

/** What the hand-off needs from the announcer. */
export interface TableHostDeps {
  jobs: Pick<Jobs, 'take' | 'forget'>;
  counters: Counters;
  metrics: Pick<LazyMetrics, 'observeAddToFirstRound' | 'observeGatewayAnswer'>;
  bootMs(): number;
  /** Runs `work`; a throw is counted and logged as `what`. */
  guard(what: string, work: () => void): void;
}

/** The table of work, as a command taken at `takenAt` (boot ms) sees it: ADD reports the time to its round 1. */
export function tableHost(deps: TableHostDeps, takenAt: number): JobHost {
  const { jobs, counters } = deps;
  return {
    added: (name, record, { sent, conflicts, gateway }, session) => {
      if (totalFrames(sent) > 0) {
        addFrames(counters, sent);
        counters.rounds.sent++;
        deps.metrics.observeAddToFirstRound((deps.bootMs() - takenAt) / 1000);
      }
      counters.conflicts += conflicts ?? 0;
      if (gateway) {
        countVerdict(counters, gateway);
        for (const r of gateway.answered) deps.metrics.observeGatewayAnswer(r.afterMs / 1000);
      }
      // A job the table cannot take stays in its record, for the next announcer's recovery.
      const { job } = record;
      let kept = false;
      if (job)
        deps.guard('cannot take a job', () => void (kept = jobs.take(name, { ...record, job }, gateway, session)));
      else jobs.forget(name, 'no job');
      return kept;
    },
    cancel: (name) => jobs.forget(name, 'cancelled'),
  };
}
