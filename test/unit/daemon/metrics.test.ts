// The announcer's metrics (src/daemon/metrics.ts): its counters; the registry loaded on first use (observations made
// before are kept, up to MAX_PENDING); and metricsFile, written from the registry at most once a second (a flush the
// throttle held back wakes the loop), only once the text changed (never the all-zero text), whenever on `force`. A
// failed write is counted, but the count it adds is no change to write for (no feedback loop); its error line comes at
// most once a minute per cause; a path that can never be written is reported once, at start, and never tried.
import { Registry } from 'prom-client';
import { describe, expect, it, onTestFinished } from 'vitest';
import { resolveNodeSettings } from '../../../src/cni/node-settings';
import { testAnnouncer } from '../../support/announcer';
import { FakePod, makeStateDir } from '../../support/daemon-fakes';
import { ManualTimers } from '../../support/manual-timers';
import {
  countServed,
  ERROR_LINE_EVERY_MS,
  LazyMetrics,
  MAX_PENDING,
  METRICS_EVERY_MS,
  MetricsFile,
  newCounters,
  PROMETHEUS_CONTENT_TYPE,
} from '../../../src/daemon/metrics';

describe('counters', () => {
  it('count each CNI command the announcer runs, and nothing else', () => {
    const c = newCounters();
    for (const command of ['ADD', 'ADD', 'DEL', 'STATUS', 'VERSION', 'BOGUS', undefined]) countServed(c, command);
    expect(c.served).toEqual({ ADD: 2, DEL: 1, CHECK: 0, GC: 0, STATUS: 1 });
  });
});

describe('LazyMetrics', () => {
  it("names prom-client's content type for its text format, the Prometheus text format 0.0.4", () => {
    expect(PROMETHEUS_CONTENT_TYPE).toBe(Registry.PROMETHEUS_CONTENT_TYPE);
    expect(PROMETHEUS_CONTENT_TYPE).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(new LazyMetrics(newCounters).contentType).toBe(PROMETHEUS_CONTENT_TYPE);
  });

  it('keeps observations made before the registry loads, then observes straight into it', async () => {
    const counters = newCounters();
    const metrics = new LazyMetrics(() => counters);
    metrics.observe('addToFirstRound', 0.002);
    metrics.observe('gatewayAnswer', 0.25);
    counters.errors = 4;
    expect(await metrics.text()).toContain('cni_announcer_add_to_first_round_seconds_count 1\n');
    metrics.observe('addToFirstRound', 0.5);
    metrics.observe('gatewayAnswer', 1);
    const text = await metrics.text();
    expect(text).toContain('cni_announcer_add_to_first_round_seconds_sum 0.502\n');
    expect(text).toContain('cni_announcer_gateway_answer_seconds_sum 1.25\n');
    expect(text).toContain('cni_announcer_errors_total 4\n');
  });

  it(`keeps at most ${MAX_PENDING} observations before it loads`, async () => {
    const metrics = new LazyMetrics(newCounters);
    for (let i = 0; i < MAX_PENDING + 5; i++) metrics.observe('addToFirstRound', 0.001);
    expect(await metrics.text()).toContain(`cni_announcer_add_to_first_round_seconds_count ${MAX_PENDING}\n`);
  });

  it('gives the text with nothing counted, whatever it counted itself', async () => {
    const counters = newCounters();
    counters.rounds.sent = 3;
    const metrics = new LazyMetrics(() => counters);
    metrics.observe('addToFirstRound', 1);
    const zero = await metrics.zeroText();
    expect(zero).toContain('cni_announcer_rounds_total{outcome="sent"} 0\n');
    expect(zero).toContain('cni_announcer_add_to_first_round_seconds_count 0\n');
  });
});

function setup(path: string | null = '/m.prom', problem?: string) {
  const writes: { file: string; text: string }[] = [];
  const attempts: string[] = [];
  const clock = { now: 0, fail: undefined as string | undefined };
  const state = makeStateDir();
  onTestFinished(() => state.remove());
  const a = testAnnouncer(state, new FakePod(), new ManualTimers(), {
    timers: { now: () => clock.now, bootMs: () => clock.now, sleep: async () => undefined },
    settings: resolveNodeSettings(path === null ? {} : { metricsFile: path }),
  });
  a.writeMetrics = (f, text) => {
    attempts.push(text);
    if (clock.fail) throw Object.assign(new Error(`${clock.fail}: cannot write`), { code: clock.fail });
    writes.push({ file: f, text });
  };
  a.metricsFileProblem = () => problem;
  const file = new MetricsFile(a);
  const sent = () => writes.map((w) => `${w.file} ${/outcome="sent"\} (\d)/.exec(w.text)![1]}`);
  return {
    counters: a.counters,
    writes,
    attempts,
    /** The error lines, each its message and fields. */
    get lines(): Record<string, unknown>[] {
      return a.records().flatMap((r) => (r.level === 'error' ? [{ msg: r.msg, ...r.fields }] : []));
    },
    clock,
    file,
    sent,
  };
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
    expect([s.writes, none.writes, none.file.wakeAt()]).toEqual([[], [], Infinity]);
  });

  const throttleTitle =
    'writes the registry text once it changed, then not again within METRICS_EVERY_MS unless forced; a flush held ' +
    'back wakes the loop when it may go';
  it(throttleTitle, async () => {
    const s = setup();
    s.counters.rounds.sent = 1;
    await s.file.flush(false);
    expect(s.file.wakeAt()).toBe(Infinity); // written: nothing held back
    s.counters.rounds.sent = 2;
    s.clock.now = 400;
    await s.file.flush(false);
    expect([s.sent(), s.file.wakeAt()]).toEqual([['/m.prom 1'], METRICS_EVERY_MS]);
    s.clock.now = METRICS_EVERY_MS;
    await s.file.flush(false);
    expect(s.file.wakeAt()).toBe(Infinity);
    await s.file.flush(true); // unchanged: not written again
    s.counters.rounds.sent = 3;
    await s.file.flush(true);
    expect(s.sent()).toEqual(['/m.prom 1', '/m.prom 2', '/m.prom 3']);
    expect(s.writes[0]!.text).toContain('# TYPE cni_announcer_add_to_first_round_seconds histogram');
  });

  const failsTitle =
    'a write that fails does not bring on the next one: ten minutes of a failing file, one attempt, one line';
  it(failsTitle, async () => {
    const s = setup();
    s.clock.fail = 'EROFS';
    s.counters.rounds.sent = 1;
    await s.file.flush(false);
    await everySecond(s, 600);
    const got = { attempts: s.attempts.length, errors: s.counters.errors, lines: s.lines.length };
    expect(got).toEqual({ attempts: 1, errors: 1, lines: 1 });
    expect(s.lines[0]).toMatchObject({ msg: 'cannot write the metrics file', file: '/m.prom' });
  });

  const causesTitle =
    'failures of one cause log one line a minute, saying how many went unlogged; another cause has its own';
  it(causesTitle, async () => {
    const s = setup();
    s.clock.fail = 'ENOSPC';
    await everySecond(s, 150, () => s.counters.rounds.sent++); // a change every second: a write, and a failure
    expect([s.attempts.length, s.counters.errors]).toEqual([150, 150]);
    expect(s.lines.map((l) => l.notLogged)).toEqual([undefined, ERROR_LINE_EVERY_MS / METRICS_EVERY_MS - 1, 59]);
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
