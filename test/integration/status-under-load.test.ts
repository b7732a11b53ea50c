// One way to wait, seen from a caller: 200 stand-in pods ADDed 20 at a time
// under rateLimit {20/s, burst 5}, while a `status` request goes to the
// announcer's socket every 50 ms throughout (harness/status-load.ts). The
// budget's waits are deadlines in the announcer's poll, so a held-back round
// never holds up an answer. Oracles: the frames on the bridge (tcpdump,
// tshark), the announcer's log and counters, and the time each status answer
// took (a generous bound: 1 s; the p99 is `make bench`'s).
import { afterAll, describe, expect, it } from 'vitest';
import {
  garpsFor,
  killStrays,
  leftoversAfterTeardown,
  ownAnnouncerProcesses,
  percentile,
  RUN_TAG,
  roundsLogged,
  runStatusLoad,
  scopePerTest,
  skipIntegration,
  type StatusLoad,
} from './harness';

const LOAD: StatusLoad = {
  prefix: `q${RUN_TAG}`,
  network: `statusload-${RUN_TAG}`,
  pods: 200,
  batch: 20,
  rateLimit: { framesPerSecond: 20, burst: 5 },
  count: 3,
  statusEveryMs: 50,
};
/** A status answer later than this is a loop that waited elsewhere than in its poll. */
const ANSWER_MAX_MS = 1000;

describe.skipIf(skipIntegration())('status under load', () => {
  const scope = scopePerTest();

  afterAll(async () => {
    expect(await ownAnnouncerProcesses()).toEqual([]);
    expect(await leftoversAfterTeardown(LOAD.prefix)).toEqual([]);
  }, 60_000);

  const podsUnderRateLimitTitle =
    `${LOAD.pods} pods under rateLimit {20/s, burst 5}, status every ${LOAD.statusEveryMs} ms: every ` +
    `answer within ${ANSWER_MAX_MS} ms, each round once, sent + dropped = planned`;
  it(podsUnderRateLimitTitle, async () => {
    const s = scope();
    killStrays(s, { strict: true });
    const { pods, atts, probes, frames, log } = await runStatusLoad(s, LOAD);

    const answered = probes.filter((p) => p.answer?.ok);
    const times = probes.map((p) => p.ms);
    console.info(
      `${probes.length} status requests under load: p50 ${percentile(times, 50).toFixed(1)} ms, ` +
        `p99 ${percentile(times, 99).toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms`,
    );
    expect(probes.filter((p) => !p.answer?.ok).map((p) => p.error ?? p.answer)).toEqual([]);
    expect(probes.length).toBeGreaterThan(20);
    expect(times.filter((t) => t > ANSWER_MAX_MS)).toEqual([]);
    // One announcer answered throughout.
    expect(new Set(answered.map((p) => p.answer!.status!.pid)).size).toBe(1);

    // Per pod: each planned round logged once, sent or dropped (round 1, the ADD's, announced); the wire holds the
    // sent ones, once each: no command and no round ran twice.
    const rounds = roundsLogged(log);
    for (const [i, att] of atts.entries()) {
      const id = att.containerId;
      const mine = (rounds.get(id) ?? []).sort((a, b) => a.slice(-1).localeCompare(b.slice(-1)));
      expect({ id, rounds: mine.map((r) => r.slice(-1)) }).toEqual({ id, rounds: ['1', '2', '3'] });
      expect({ id, first: mine[0] }).toEqual({ id, first: 'announced 1' });
      const sent = mine.filter((r) => r.startsWith('announced')).length;
      expect({ id, onWire: garpsFor(frames, pods[i]!.mac, pods[i]!.ip).length }).toEqual({ id, onWire: sent });
    }
    const counters = answered.at(-1)!.answer!.status!.counters;
    const logged = [...rounds.values()].flat();
    expect(counters.rateLimited.dropped).toBe(logged.filter((r) => r.startsWith('dropped')).length);
    expect(counters.rounds.sent).toBe(logged.filter((r) => r.startsWith('announced')).length);
    expect(counters.rateLimited.dropped).toBeGreaterThan(0); // the limit did bite
  }, 180_000);
});
