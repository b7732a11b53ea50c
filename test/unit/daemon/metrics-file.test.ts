// metricsFile: written from the registry at most once a second, only once the
// text changed (never the all-zero text), whenever on `force`. A failed write is
// counted, but the count it adds is no change to write for (no feedback loop);
// its error line comes at most once a minute per cause; a path that can never be
// written is reported once, at start, and never tried.
import { describe, expect, it } from 'vitest';
import { newCounters } from '../../../src/daemon/counters';
import { LazyMetrics } from '../../../src/daemon/lazy-metrics';
import { ERROR_LINE_EVERY_MS, METRICS_EVERY_MS, MetricsFile } from '../../../src/daemon/metrics-file';

function setup(path: string | null = '/m.prom', problem?: string) {
  const counters = newCounters();
  const writes: { file: string; text: string }[] = [];
  const attempts: string[] = [];
  const lines: Record<string, unknown>[] = [];
  const clock = { now: 0, fail: undefined as string | undefined };
  const file = new MetricsFile(
    {
      now: () => clock.now,
      write: (f, text) => {
        attempts.push(text);
        if (clock.fail) throw Object.assign(new Error(`${clock.fail}: cannot write`), { code: clock.fail });
        writes.push({ file: f, text });
      },
      problem: () => problem,
      count: () => void counters.errors++,
      log: { error: (msg, fields) => void lines.push({ msg, ...fields }) },
    },
    new LazyMetrics(() => counters),
    path ?? undefined,
  );
  return { counters, writes, attempts, lines, clock, file };
}

/** Flushes once a second, from `s.clock.now`, for `seconds`, running `each` before every flush. */
async function everySecond(s: ReturnType<typeof setup>, seconds: number, each: () => void = () => {}): Promise<void> {
  for (let i = 0; i < seconds; i++) {
    s.clock.now += METRICS_EVERY_MS;
    each();
    await s.file.flush(false);
  }
}

describe('MetricsFile', () => {
  it('writes nothing without a file, nor while nothing was counted', async () => {
    const s = setup();
    await s.file.flush(true);
    const none = setup(null);
    none.counters.errors = 1;
    await none.file.flush(true);
    expect([s.writes, none.writes]).toEqual([[], []]);
  });

  it('writes the registry text once it changed, then not again within METRICS_EVERY_MS unless forced', async () => {
    const s = setup();
    s.counters.rounds.sent = 1;
    await s.file.flush(false);
    s.counters.rounds.sent = 2;
    s.clock.now = METRICS_EVERY_MS - 1;
    await s.file.flush(false);
    expect(s.writes.map((w) => /outcome="sent"\} (\d)/.exec(w.text)![1])).toEqual(['1']);
    s.clock.now = METRICS_EVERY_MS;
    await s.file.flush(false);
    await s.file.flush(true); // unchanged: not written again
    s.counters.rounds.sent = 3;
    await s.file.flush(true);
    expect(s.writes.map((w) => `${w.file} ${/outcome="sent"\} (\d)/.exec(w.text)![1]}`)).toEqual([
      '/m.prom 1',
      '/m.prom 2',
      '/m.prom 3',
    ]);
    expect(s.writes[0]!.text).toContain('# TYPE cni_announcer_add_to_first_round_seconds histogram');
  });

  const writeThatFailsTitle =
    'a write that fails does not bring on the next one: ten minutes of a failing file, one attempt, one line';
  it(writeThatFailsTitle, async () => {
    const s = setup();
    s.clock.fail = 'EROFS';
    s.counters.rounds.sent = 1;
    await s.file.flush(false);
    await everySecond(s, 600);
    expect({ attempts: s.attempts.length, errors: s.counters.errors, lines: s.lines.length }).toEqual({
      attempts: 1,
      errors: 1,
      lines: 1,
    });
    expect(s.lines[0]).toMatchObject({ msg: 'cannot write the metrics file', file: '/m.prom' });
  });

  const failuresOfOneTitle =
    'failures of one cause log one line a minute, saying how many went unlogged; another cause has its own';
  it(failuresOfOneTitle, async () => {
    const s = setup();
    s.clock.fail = 'ENOSPC';
    await everySecond(s, 150, () => s.counters.rounds.sent++); // a change every second: a write, and a failure
    expect(s.attempts).toHaveLength(150);
    expect(s.counters.errors).toBe(150);
    const atMinutes = s.lines.map((l) => l.notLogged);
    expect(atMinutes).toEqual([undefined, ERROR_LINE_EVERY_MS / METRICS_EVERY_MS - 1, 59]);
    s.clock.fail = 'EACCES';
    await everySecond(s, 2, () => s.counters.rounds.sent++);
    expect(s.lines).toHaveLength(4);
    expect(String(s.lines[3]!.error)).toContain('EACCES');
  });

  it('writes the next change once the file can be written again', async () => {
    const s = setup();
    s.clock.fail = 'EROFS';
    s.counters.rounds.sent = 1;
    await s.file.flush(false);
    s.clock.fail = undefined;
    await everySecond(s, 5);
    expect(s.writes).toEqual([]); // nothing changed but the failure's own count
    s.counters.rounds.sent = 2;
    await everySecond(s, 1);
    expect(s.writes).toHaveLength(1);
    expect(s.writes[0]!.text).toContain('cni_announcer_errors_total 1');
  });

  it('a path that can never be written is reported once, at start, counted once, and never tried', async () => {
    const s = setup('/nonexistent/m.prom', '/nonexistent does not exist');
    s.file.start();
    await everySecond(s, 120, () => s.counters.rounds.sent++);
    await s.file.flush(true);
    expect({ attempts: s.attempts.length, errors: s.counters.errors }).toEqual({ attempts: 0, errors: 1 });
    expect(s.lines).toEqual([
      {
        msg: 'metricsFile can never be written: not writing it',
        file: '/nonexistent/m.prom',
        problem: '/nonexistent does not exist',
      },
    ]);
  });
});
