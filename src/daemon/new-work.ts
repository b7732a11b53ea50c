// Pure but for its counters: the work of a job the announcer's table takes,
// scheduled from where the job stands at `now` (boot ms).
import type { GatewayVerdict } from '../announce/gateway-verdict';
import type { Counters } from './counters';
import { gatewayWorkOf } from './gateway-state';
import { LATE_GRACE_MS, nextRound } from './progress';
import type { Work } from './rounds';

/** How a job came to the table. */
export type How = 'added' | 'recovered' | 'handed over';

/**
 * The work of `job` at `now`: a deferred wait, the next round due (`from`: the next round of a burst handed over, else
 * round 2), and its gateway check (`verdict` as ADD or the record left it); undefined when a deferred wait's deadline
 * has passed. A work with no round due and nothing to check is over at once.
 */
export function newWork(
  job: Pick<Work, 'name' | 'job' | 'originalMacs' | 'log'>,
  came: { how: How; verdict: GatewayVerdict | undefined; from: number },
  now: number,
  counters: Counters,
): Work | undefined {
  const { how, from } = came;
  const work: Work = {
    ...job,
    firstRoundAt: job.job.firstRoundAt,
    next: 1,
    dueAt: undefined,
    roundsSent: 0,
    delayed: false,
  };
  const { firstRoundAt, readyDeadline, schedule } = job.job;
  if (firstRoundAt === undefined) {
    if (now >= readyDeadline) return undefined;
    work.next = 0;
    work.deferred = { checkAt: now };
    counters.deferred.started++;
  } else {
    work.roundsSent = from;
    // Recovered work may have been sent up to its last due round already: no grace for it.
    const grace = how === 'recovered' ? 0 : LATE_GRACE_MS;
    const { index, dueAt } = nextRound(schedule, firstRoundAt, from, now, grace);
    if (dueAt !== undefined && how !== 'recovered' && index > from) {
      counters.rounds.skippedLate += index - from;
      job.log.info('rounds skipped: their time has passed', { skipped: index - from });
    }
    work.next = index;
    work.dueAt = dueAt;
  }
  work.gateway = gatewayWorkOf(job.job, came.verdict, now, {
    askNow: how === 'added' || work.dueAt === undefined,
    afterRoundOne: how === 'added',
  });
  return work;
}
