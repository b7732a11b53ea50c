// The fault soak of `make soak` (scripts/soak, issue 34 part 4), run inside `make test` for 60 s with a fixed seed:
// pods of the real bridge plugin churn through the announcer (ADD, CHECK, DEL, deferred pods, IP-derived MACs,
// bursts, the gateway check) while the chaos schedule SIGTERMs, SIGKILLs, SIGSTOPs, idles, upgrades and replaces it.
// Every invariant must hold (tshark on the bridge and the CNI results are the oracle) and every fault kind must have
// happened at least once; the report's tables are printed either way.
import { describe, expect, it } from 'vitest';
import { faultCounts, renderReport } from '../../scripts/soak/report';
import { runSoak } from '../../scripts/soak/soak';
import { RUN_TAG, scopePerTest, skipIntegration } from './harness';

/** The prefix of every netns and link the soak makes (its own choice: `sk` and the run's tag). */
const PREFIX = `sk${RUN_TAG}`;
/** The run's seed: the same faults in the same order, the same pods, every time. */
const SEED = 3407;
/** Seconds of load and chaos: the minimum of each fault fits well inside. */
const SECONDS = 60;

describe.skipIf(skipIntegration())('the fault soak (make soak)', () => {
  const scope = scopePerTest(PREFIX);

  const title =
    `${SECONDS} s of churn under SIGTERM, SIGKILL, SIGSTOP, idle exits, an upgrade and a resident announcer ` +
    'replaced (seed 3407): every invariant holds, every fault happened';
  it(title, async () => {
    const report = await runSoak(scope(), {
      seconds: SECONDS,
      seed: SEED,
      workers: 6,
      signal: new AbortController().signal,
      say: (line) => console.info(line),
    });
    console.info(renderReport(report));
    expect(report.problems).toEqual([]);
    for (const [kind, count] of faultCounts(report))
      expect(count.counted, `${kind} faults`).toBeGreaterThanOrEqual(report.minimum);
    // A `note` row reports what no promise of the product rules out (see scripts/soak/oracle-more.ts).
    for (const row of report.rows.filter((r) => r.from !== 'note'))
      expect(
        row.violations.map((v) => `${v.pod ?? ''} ${v.what}`),
        row.label,
      ).toEqual([]);
  }, 420_000);
});
