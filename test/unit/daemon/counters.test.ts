import { describe, expect, it } from 'vitest';
import { addFrames, newCounters, prometheusText } from '../../../src/daemon/counters';

describe('counters', () => {
  it('adds frames by kind', () => {
    const c = newCounters();
    addFrames(c, { garpRequest: 2, garpReply: 1, na: 3 });
    addFrames(c, { garpRequest: 1, garpReply: 0, na: 0 });
    expect(c.frames).toEqual({ garpRequest: 3, garpReply: 1, na: 3 });
  });

  it('writes the Prometheus text format: HELP, TYPE counter, labelled samples, trailing newline', () => {
    const c = newCounters();
    addFrames(c, { garpRequest: 4, garpReply: 0, na: 2 });
    c.rateLimited.dropped = 1;
    c.conflicts = 2;
    const text = prometheusText(c);
    expect(text.endsWith('\n')).toBe(true);
    expect(text).toContain('# TYPE cni_announcer_frames_sent_total counter\n');
    expect(text).toContain('cni_announcer_frames_sent_total{kind="garp_request"} 4\n');
    expect(text).toContain('cni_announcer_frames_sent_total{kind="na"} 2\n');
    expect(text).toContain('cni_announcer_rate_limited_rounds_total{outcome="dropped"} 1\n');
    expect(text).toContain('cni_announcer_errors_total 0\n');
    expect(text).toContain('# TYPE cni_announcer_address_conflicts_total counter\ncni_announcer_address_conflicts_total 2\n');
    // Every sample line is `name{labels} value` or `name value`.
    for (const line of text.trim().split('\n').filter((l) => !l.startsWith('#'))) {
      expect(line).toMatch(/^cni_announcer_[a-z_]+(\{[a-z_]+="[a-z_]+"\})? \d+$/);
    }
  });
});
