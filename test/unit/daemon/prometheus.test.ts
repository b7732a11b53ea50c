// The announcer's registry (src/daemon/prometheus.ts): the same names, labels and values as the hand-written text it
// replaces (checked line by line against that text), read live from the counters at each scrape, the histograms'
// buckets, and a registry of its own.
import { register as globalRegistry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { addFrames, newCounters } from '../../../src/daemon/metrics';
import { ADD_TO_FIRST_ROUND_BUCKETS, AnnouncerMetrics } from '../../../src/daemon/prometheus';

/**
 * The text the announcer wrote by hand before the registry (same counters as below), then the gateway check's
 * families, less the blank lines prom-client puts between metrics.
 */
const BEFORE =
  `# HELP cni_announcer_frames_sent_total Announcement frames sent, by kind.
# TYPE cni_announcer_frames_sent_total counter
cni_announcer_frames_sent_total{kind="garp_request"} 4
cni_announcer_frames_sent_total{kind="garp_reply"} 1
cni_announcer_frames_sent_total{kind="na"} 2
# HELP cni_announcer_rounds_total Announcement rounds, by outcome.
# TYPE cni_announcer_rounds_total counter
cni_announcer_rounds_total{outcome="sent"} 3
cni_announcer_rounds_total{outcome="skipped_not_ready"} 0
cni_announcer_rounds_total{outcome="skipped_late"} 1
# HELP cni_announcer_deferred_waits_total Waits for a pod that was not ready during ADD, by how they ended.
# TYPE cni_announcer_deferred_waits_total counter
cni_announcer_deferred_waits_total{outcome="started"} 2
cni_announcer_deferred_waits_total{outcome="ready"} 0
cni_announcer_deferred_waits_total{outcome="timed_out"} 1
cni_announcer_deferred_waits_total{outcome="gone"} 0
# HELP cni_announcer_rate_limited_rounds_total Rounds held back by the node-wide rate limit.
# TYPE cni_announcer_rate_limited_rounds_total counter
cni_announcer_rate_limited_rounds_total{outcome="delayed"} 0
cni_announcer_rate_limited_rounds_total{outcome="dropped"} 1
# HELP cni_announcer_address_conflicts_total IPv4 addresses not announced because another host uses them ` +
  `(conflictCheck).
# TYPE cni_announcer_address_conflicts_total counter
cni_announcer_address_conflicts_total 2
# HELP cni_announcer_errors_total Errors of the background announcer.
# TYPE cni_announcer_errors_total counter
cni_announcer_errors_total 5
# HELP cni_announcer_gateway_checks_total Attachments by the final verdict of their gateway check (gatewayCheck).
# TYPE cni_announcer_gateway_checks_total counter
cni_announcer_gateway_checks_total{result="answered"} 3
cni_announcer_gateway_checks_total{result="no_answer"} 1
cni_announcer_gateway_checks_total{result="no_gateway"} 0
cni_announcer_gateway_checks_total{result="off"} 2
# HELP cni_announcer_gateway_requests_total ARP requests and Neighbor Solicitations the gateway check sent.
# TYPE cni_announcer_gateway_requests_total counter
cni_announcer_gateway_requests_total 4
# HELP cni_announcer_node_mismatches_total What the node-local proof found wrong after round 1 (the pod's MAC on ` +
  `another bridge port, a stale entry).
# TYPE cni_announcer_node_mismatches_total counter
cni_announcer_node_mismatches_total{kind="duplicate_mac"} 1
cni_announcer_node_mismatches_total{kind="stale_neighbour"} 2
cni_announcer_node_mismatches_total{kind="not_learned"} 0`;

function counted() {
  const c = newCounters();
  addFrames(c, { garpRequest: 4, garpReply: 1, na: 2 });
  Object.assign(c.rounds, { sent: 3, skippedLate: 1 });
  Object.assign(c.deferred, { started: 2, timedOut: 1 });
  c.rateLimited.dropped = 1;
  c.conflicts = 2;
  c.errors = 5;
  Object.assign(c.gateway, { asks: 9, requests: 4, answered: 3, noAnswer: 1, off: 2 });
  Object.assign(c.nodeMismatches, { duplicateMac: 1, staleNeighbour: 2 });
  return c;
}

const lines = (text: string): string[] => text.split('\n').filter((l) => l !== '');

describe('AnnouncerMetrics', () => {
  const givesCountersAsTitle =
    'gives the counters as the hand-written text did: names, help, labels, values ' +
    'and order; then the histogram; a trailing newline';
  it(givesCountersAsTitle, async () => {
    const text = await new AnnouncerMetrics(counted).text();
    expect(text.endsWith('\n')).toBe(true);
    const all = lines(text);
    expect(all.slice(0, lines(BEFORE).length)).toEqual(lines(BEFORE));
    expect(all.slice(lines(BEFORE).length, lines(BEFORE).length + 2)).toEqual([
      '# HELP cni_announcer_add_to_first_round_seconds Time from the announcer taking an ADD to its ' +
        'round 1 on the wire.',
      '# TYPE cni_announcer_add_to_first_round_seconds histogram',
    ]);
  });

  it('reads the counters at every scrape: what was counted since shows', async () => {
    const c = newCounters();
    const metrics = new AnnouncerMetrics(() => c);
    expect(await metrics.text()).toContain('cni_announcer_rounds_total{outcome="sent"} 0\n');
    c.rounds.sent = 7;
    c.errors = 1;
    await metrics.text();
    const text = await metrics.text(); // read twice: values, not sums of reads
    expect(text).toContain('cni_announcer_rounds_total{outcome="sent"} 7\n');
    expect(text).toContain('cni_announcer_errors_total 1\n');
  });

  it('observes ADD to round 1 in buckets from 1 ms to 10 s: cumulative counts, sum and count', async () => {
    expect(ADD_TO_FIRST_ROUND_BUCKETS[0]).toBe(0.001);
    expect(ADD_TO_FIRST_ROUND_BUCKETS.at(-1)).toBe(10);
    const metrics = new AnnouncerMetrics(newCounters);
    metrics.observe('addToFirstRound', 0.003);
    metrics.observe('addToFirstRound', 0.2);
    metrics.observe('addToFirstRound', 30);
    const text = await metrics.text();
    const bucket = (le: string): string =>
      /_bucket\{le="([^"]+)"\} (\d+)/.exec(lines(text).find((l) => l.includes(`le="${le}"`))!)![2]!;
    expect([
      bucket('0.001'),
      bucket('0.0025'),
      bucket('0.005'),
      bucket('0.1'),
      bucket('0.25'),
      bucket('10'),
      bucket('+Inf'),
    ]).toEqual(['0', '0', '1', '1', '2', '2', '3']);
    expect(text).toContain('cni_announcer_add_to_first_round_seconds_count 3\n');
    expect(text).toContain('cni_announcer_add_to_first_round_seconds_sum 30.203\n');
  });

  const keepsRegistryOfTitle =
    "keeps a registry of its own: nothing in prom-client's global one, no " +
    "process metrics, two announcers' registries apart";
  it(keepsRegistryOfTitle, async () => {
    const [a, b] = [new AnnouncerMetrics(newCounters), new AnnouncerMetrics(newCounters)];
    a.observe('addToFirstRound', 1);
    expect(await b.text()).toContain('cni_announcer_add_to_first_round_seconds_count 0\n');
    expect(await globalRegistry.metrics()).not.toContain('cni_announcer');
    expect(await a.text()).not.toMatch(/process_|nodejs_/);
  });
});
