// The announcer's registry (metrics.ts), loaded on first use: prom-client
// costs an announcer's start ~9 ms (measured, median), and a cold ADD waits
// for the announcer it starts to listen. So the registry loads with the first
// scrape or metrics file write; an observation made before waits here.
import type { Counters } from './counters';
import type { AnnouncerMetrics } from './metrics';

/** The Prometheus text format 0.0.4, as prom-client names it. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
/** Observations kept while the registry is not loaded; later ones are dropped (nothing reads them anyway). */
export const MAX_PENDING = 1000;

/** The histograms an observation goes to, by AnnouncerMetrics method. */
type Observed = 'observeAddToFirstRound' | 'observeGatewayAnswer';

/** AnnouncerMetrics, loaded when its text is first asked for. */
export class LazyMetrics {
  readonly contentType = PROMETHEUS_CONTENT_TYPE;
  private loading: Promise<AnnouncerMetrics> | undefined;
  private loaded: AnnouncerMetrics | undefined;
  private readonly pending: { histogram: Observed; seconds: number }[] = [];

  /** `counters`: the announcer's counters, read at every scrape and write. */
  constructor(private readonly counters: () => Counters) {}

  /** Every metric in the Prometheus text format (loading the registry first). */
  async text(): Promise<string> {
    return (await this.load()).text();
  }

  /** The text of a registry with nothing counted (what a metrics file never needs to hold). */
  async zeroText(): Promise<string> {
    const { AnnouncerMetrics } = await import('./metrics');
    const { newCounters } = await import('./counters');
    return new AnnouncerMetrics(newCounters).text();
  }

  /** One ADD's time from being taken to round 1 on the wire. */
  observeAddToFirstRound(seconds: number): void {
    this.observe('observeAddToFirstRound', seconds);
  }

  /** One gateway's time from round 1 to its answer. */
  observeGatewayAnswer(seconds: number): void {
    this.observe('observeGatewayAnswer', seconds);
  }

  private observe(histogram: Observed, seconds: number): void {
    if (this.loaded) this.loaded[histogram](seconds);
    else if (this.pending.length < MAX_PENDING) this.pending.push({ histogram, seconds });
  }

  private load(): Promise<AnnouncerMetrics> {
    return (this.loading ??= import('./metrics').then(({ AnnouncerMetrics }) => {
      const metrics = new AnnouncerMetrics(this.counters);
      for (const { histogram, seconds } of this.pending.splice(0)) metrics[histogram](seconds);
      return (this.loaded = metrics);
    }));
  }
}
