// Issue 25's budget: the p99 time a `status` request waits for its answer
// while the announcer works through 200 stand-in pods under rateLimit
// {20/s, burst 5}, one status every 50 ms (test/integration/harness/status-load.ts,
// the scenario of test/integration/status-under-load.test.ts).
import { runStatusLoad, type StatusLoad } from '../../test/integration/harness/status-load';
import { percentile } from '../../test/integration/harness/status-prober';
import { throwCleanupErrors, type Scope } from '../../test/integration/harness/scope';
import type { Verdict } from './report';

/** The goal for the p99, in ms. */
export const STATUS_P99_GOAL_MS = 100;

const LOAD: StatusLoad = {
  prefix: 'bnchst',
  network: 'bench-status-load',
  pods: 200,
  batch: 20,
  rateLimit: { framesPerSecond: 20, burst: 5 },
  count: 3,
  statusEveryMs: 50,
};

/** Runs the scenario once; the verdict on the p99, and a line with what was seen. */
export async function statusUnderLoad(parent: Scope): Promise<{ verdict: Verdict; line: string }> {
  // A scope of its own, closed here (or by the bench's on a signal): its bridge and pods are gone before the report.
  const scope = parent.child('status under load');
  let probes;
  try {
    ({ probes } = await runStatusLoad(scope, LOAD));
  } finally {
    throwCleanupErrors(await scope.close());
  }
  const times = probes.map((p) => p.ms);
  const failed = probes.filter((p) => !p.answer?.ok).length;
  const p99 = percentile(times, 99);
  return {
    verdict: {
      label: `status p99 under load (${LOAD.pods} pods, rateLimit 20/s burst 5, status every ${LOAD.statusEveryMs} ms)`,
      measured: `${p99.toFixed(1)} ms (goal <= ${STATUS_P99_GOAL_MS} ms)`,
      pass: p99 <= STATUS_P99_GOAL_MS && failed === 0,
    },
    line:
      `status under load: ${probes.length} requests, p50 ${percentile(times, 50).toFixed(1)} ms, ` +
      `p99 ${p99.toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms, unanswered ${failed}.`,
  };
}
