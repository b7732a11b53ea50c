// The registry loads on first use: observations made before are kept (up to
// MAX_PENDING) and show once it loads; the content type is prom-client's own.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { newCounters } from '../../../src/daemon/counters';
import { LazyMetrics, MAX_PENDING, PROMETHEUS_CONTENT_TYPE } from '../../../src/daemon/lazy-metrics';

describe('LazyMetrics', () => {
  it("names prom-client's content type for its text format", () => {
    expect(PROMETHEUS_CONTENT_TYPE).toBe(Registry.PROMETHEUS_CONTENT_TYPE);
    expect(new LazyMetrics(newCounters).contentType).toBe(PROMETHEUS_CONTENT_TYPE);
  });

  it('keeps observations made before the registry loads, then observes straight into it', async () => {
    const counters = newCounters();
    const metrics = new LazyMetrics(() => counters);
    metrics.observeAddToFirstRound(0.002);
    counters.errors = 4;
    expect(await metrics.text()).toContain('cni_announcer_add_to_first_round_seconds_count 1\n');
    metrics.observeAddToFirstRound(0.5);
    const text = await metrics.text();
    expect(text).toContain('cni_announcer_add_to_first_round_seconds_count 2\n');
    expect(text).toContain('cni_announcer_add_to_first_round_seconds_sum 0.502\n');
    expect(text).toContain('cni_announcer_errors_total 4\n');
  });

  it(`keeps at most ${MAX_PENDING} observations before it loads`, async () => {
    const metrics = new LazyMetrics(newCounters);
    for (let i = 0; i < MAX_PENDING + 5; i++) metrics.observeAddToFirstRound(0.001);
    expect(await metrics.text()).toContain(`cni_announcer_add_to_first_round_seconds_count ${MAX_PENDING}\n`);
  });

  it('gives the text with nothing counted, whatever it counted itself', async () => {
    const counters = newCounters();
    counters.rounds.sent = 3;
    const metrics = new LazyMetrics(() => counters);
    metrics.observeAddToFirstRound(1);
    const zero = await metrics.zeroText();
    expect(zero).toContain('cni_announcer_rounds_total{outcome="sent"} 0\n');
    expect(zero).toContain('cni_announcer_add_to_first_round_seconds_count 0\n');
  });
});
