// The conflict probe of a deferred round 1 never holds the announcer's loop:
// while pod A's window runs (2 s), pod B's round goes out at its time and a
// control request is answered. Fakes as in daemon.test.ts (DaemonLoop).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/log';
import { jobIn, writeJob } from '../../support/daemon-fakes';
import { answerOf, DaemonLoop } from '../../support/daemon-loop';

let d: DaemonLoop;
let lines: string[];
beforeEach(() => {
  d = new DaemonLoop();
  lines = [];
  // Each job's lines name its container, so that the order of A's and B's rounds shows.
  d.deps.jobLog = (job) => createLogger((line) => lines.push(`${job.containerId}: ${line.trimEnd()}`), 'debug');
});
afterEach(() => d.state.remove());

/** A probe frame (sender IP 0.0.0.0) or an announcement. */
const kinds = (): string[] => d.pod.sent.map((f) => (f.readUInt32BE(28) === 0 ? 'probe' : 'garp'));

describe('the conflict probe in the announcer', () => {
  const doesNotHoldTitle =
    "does not hold the loop: B's round goes out 500 ms into A's 2 s window, before A's " +
    'round 1, and a status request is answered during it';
  it(doesNotHoldTitle, async () => {
    d.pod.arpFrames = [];
    // A: not ready during ADD; its round 1 probes for 2 s (probes at 0, 667, 1333 ms).
    const a = jobIn(d.state, {
      containerId: 'a',
      firstRoundAt: undefined,
      readyDeadline: d.timers.bootMs() + 10_000,
      conflictCheck: { action: 'warn', probeMs: 2000, probes: 3 },
    });
    writeJob(d.state, a);
    // B: round 1 sent 500 ms before; its round 2 is due 1000 ms after it, 500 ms into A's window.
    writeJob(d.state, d.sentAt(-500, { containerId: 'b' }));
    const status = d.controlAt(1000, { op: 'status' });
    let sentBefore: string[] | undefined;
    d.poll.at(1001, () => void (sentBefore = kinds()));
    await d.run();

    const announced = lines
      .filter((l) => l.includes('INFO announced'))
      .map((l) => l.replace(/ frames=.*/, '').replace(/^.*?(\w): .*announced/, '$1'));
    expect(announced.slice(0, 2)).toEqual(['b round=2 of=3', 'a round=1 of=3']);
    // What went out of the pod: A's first probe, B's round 2, A's two other probes, A's round 1.
    expect(kinds().slice(0, 5)).toEqual(['probe', 'garp', 'probe', 'probe', 'garp']);
    // The probe only ever looked at its receivers, never waited on them; no poll(2) before B's due time was asked to
    // wait past it.
    expect(d.pollInTimeouts.length).toBeGreaterThan(0);
    expect(new Set(d.pollInTimeouts)).toEqual(new Set([0]));
    const early = d.poll.calls.filter((p) => p.at < 500);
    expect(early.length).toBeGreaterThan(0);
    expect(early.filter((p) => p.at + p.timeoutMs > 500)).toEqual([]);
    // The status was answered in A's window: after its second probe, before its third, A still deferred.
    expect(status.client!.replies[0]!.at).toBeLessThanOrEqual(1001);
    expect(sentBefore).toEqual(['probe', 'garp', 'probe']);
    expect(answerOf(status)).toMatchObject({
      ok: true,
      status: { attachments: expect.arrayContaining([expect.objectContaining({ containerId: 'a', deferred: true })]) },
    });
  });
});
