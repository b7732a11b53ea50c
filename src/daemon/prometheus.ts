// The announcer's metrics as Prometheus reads them: one prom-client Registry of
// its own (not prom-client's global one, and no default process metrics),
// served on /metrics (--listen) and written to metricsFile. The counters stay
// plain numbers (Counters, which `announcer status` also shows) and are copied
// into the registry at each read; the histograms are observed as their events
// come (an ADD's round 1, a gateway's answer).
import Counter from 'prom-client/lib/counter';
import Histogram from 'prom-client/lib/histogram';
import Registry from 'prom-client/lib/registry';
import type { Counters } from './metrics';

/**
 * Upper bounds (s) of `cni_announcer_add_to_first_round_seconds`: from 1 ms (a ready pod, no probe) to 10 s (a pod that
 * took long to be ready).
 */
export const ADD_TO_FIRST_ROUND_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** Upper bounds (s) of `cni_announcer_gateway_answer_seconds`: from an answer to round 1's ask to a late round's. */
export const GATEWAY_ANSWER_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

const PREFIX = 'cni_announcer';

/** Where a counter family's numbers are in Counters: one number, or one per label value (its fields, snake_cased). */
type Read = (c: Counters) => number | Record<string, number>;

/** The counter families: each one's name (less the prefix), help, where its numbers are, and its label. */
const FAMILIES: readonly [name: string, help: string, read: Read, label?: string][] = [
  ['frames_sent_total', 'Announcement frames sent, by kind.', (c) => ({ ...c.frames }), 'kind'],
  ['rounds_total', 'Announcement rounds, by outcome.', (c) => c.rounds, 'outcome'],
  [
    'deferred_waits_total',
    'Waits for a pod that was not ready during ADD, by how they ended.',
    (c) => c.deferred,
    'outcome',
  ],
  ['rate_limited_rounds_total', 'Rounds held back by the node-wide rate limit.', (c) => c.rateLimited, 'outcome'],
  [
    'address_conflicts_total',
    'IPv4 addresses not announced because another host uses them (conflictCheck).',
    (c) => c.conflicts,
  ],
  ['errors_total', 'Errors of the background announcer.', (c) => c.errors],
  [
    'gateway_checks_total',
    'Attachments by the final verdict of their gateway check (gatewayCheck).',
    ({ gateway: { asks: _a, requests: _r, ...results } }) => results,
    'result',
  ],
  [
    'gateway_requests_total',
    'ARP requests and Neighbor Solicitations the gateway check sent.',
    (c) => c.gateway.requests,
  ],
  [
    'node_mismatches_total',
    "What the node-local proof found wrong after round 1 (the pod's MAC on another bridge port, a stale entry).",
    (c) => c.nodeMismatches,
    'kind',
  ],
];

function snakeCase(field: string): string {
  return field.replace(/[A-Z]/g, (m) => `_${m.toLowerCase()}`);
}

/** The histograms, each observed as its event comes. */
export type HistogramName = 'addToFirstRound' | 'gatewayAnswer';

/** The registry of one announcer. */
export class AnnouncerMetrics {
  private readonly registry = new Registry();
  private readonly histograms: Record<HistogramName, Histogram>;

  /** `counters`: the announcer's counters, read at every scrape and write. */
  constructor(counters: () => Counters) {
    for (const [name, help, read, label] of FAMILIES) {
      new Counter({
        name: `${PREFIX}_${name}`,
        help,
        labelNames: label ? [label] : [],
        registers: [this.registry],
        // The counters are the truth: the registry takes their values as they are now.
        collect() {
          this.reset();
          const value = read(counters());
          if (typeof value === 'number' || label === undefined) this.inc(Number(value));
          else for (const [field, n] of Object.entries(value)) this.inc({ [label]: snakeCase(field) }, n);
        },
      });
    }
    const histogram = (name: string, help: string, buckets: readonly number[]): Histogram =>
      new Histogram({ name: `${PREFIX}_${name}`, help, buckets: [...buckets], registers: [this.registry] });
    this.histograms = {
      addToFirstRound: histogram(
        'add_to_first_round_seconds',
        'Time from the announcer taking an ADD to its round 1 on the wire.',
        ADD_TO_FIRST_ROUND_BUCKETS,
      ),
      gatewayAnswer: histogram(
        'gateway_answer_seconds',
        "Time from an attachment's round 1 to a routed gateway's answer to the gateway check.",
        GATEWAY_ANSWER_BUCKETS,
      ),
    };
  }

  /** Every metric in the Prometheus text format 0.0.4. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** One event's time: an ADD's from being taken to round 1 on the wire, a gateway's from round 1 to its answer. */
  observe(histogram: HistogramName, seconds: number): void {
    this.histograms[histogram].observe(seconds);
  }
}
