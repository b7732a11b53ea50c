// metricsFile: written from the registry at most once a second, only once the
// text changed (never the all-zero text), whenever on `force`; a failed write
// is reported and tried again.
import { describe, expect, it } from 'vitest';
import { newCounters } from '../../../src/daemon/counters';
import { LazyMetrics } from '../../../src/daemon/lazy-metrics';
import { METRICS_EVERY_MS, MetricsFile } from '../../../src/daemon/metrics-file';

function setup() {
  const counters = newCounters();
  const writes: { file: string; text: string }[] = [];
  const failures: string[] = [];
  const clock = { now: 0, fail: false };
  const file = new MetricsFile(
    {
      now: () => clock.now,
      write: (f, text) => {
        if (clock.fail) throw new Error('EROFS');
        writes.push({ file: f, text });
      },
      failed: (f, err) => void failures.push(`${f}: ${(err as Error).message}`),
    },
    new LazyMetrics(() => counters),
  );
  return { counters, writes, failures, clock, file };
}

describe('MetricsFile', () => {
  it('writes nothing without a file, nor while nothing was counted', async () => {
    const s = setup();
    await s.file.flush('/m.prom', true);
    s.counters.errors = 1;
    await s.file.flush(undefined, true);
    expect(s.writes).toEqual([]);
  });

  it('writes the registry text once it changed, then not again within METRICS_EVERY_MS unless forced', async () => {
    const s = setup();
    s.counters.rounds.sent = 1;
    await s.file.flush('/m.prom', false);
    s.counters.rounds.sent = 2;
    s.clock.now = METRICS_EVERY_MS - 1;
    await s.file.flush('/m.prom', false);
    expect(s.writes.map((w) => /outcome="sent"\} (\d)/.exec(w.text)![1])).toEqual(['1']);
    s.clock.now = METRICS_EVERY_MS;
    await s.file.flush('/m.prom', false);
    await s.file.flush('/m.prom', true); // unchanged: not written again
    s.counters.rounds.sent = 3;
    await s.file.flush('/other.prom', true);
    expect(s.writes.map((w) => `${w.file} ${/outcome="sent"\} (\d)/.exec(w.text)![1]}`)).toEqual([
      '/m.prom 1',
      '/m.prom 2',
      '/other.prom 3',
    ]);
    expect(s.writes[0]!.text).toContain('# TYPE cni_announcer_add_to_first_round_seconds histogram');
  });

  it('reports a failed write and writes the same text at the next chance', async () => {
    const s = setup();
    s.counters.errors = 1;
    s.clock.fail = true;
    await s.file.flush('/m.prom', false);
    s.clock.fail = false;
    await s.file.flush('/m.prom', false);
    expect(s.failures).toEqual(['/m.prom: EROFS']);
    expect(s.writes).toHaveLength(1);
  });
});
