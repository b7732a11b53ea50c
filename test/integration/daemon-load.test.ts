// The background announcer under load: 200 pods ADDed 20 at a time under a
// tight node-wide rate limit, so that later rounds compete with each other and
// with the round 1s of the ADDs still coming. Oracles: the frames on the
// bridge (tcpdump, tshark), the announcer's counters (`announcer status
// --json`) and its log lines. Times appear only as capture timestamps and log
// timestamps compared with each other and with the schedule, never as a
// measured duration.
import { readFile } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import {
  allocSubnet,
  announcerAdd,
  announcerDel,
  announcerFiles,
  announcerStatus,
  daemonStatus,
  assertCniOk,
  createBridge,
  createStandInFleet,
  daemonsOf,
  garpsFor,
  killStrays,
  leftoversAfterTeardown,
  ms,
  ownAnnouncerProcesses,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  startCapture,
  waitDaemonGone,
  inBatches,
  timedLogRecords,
  attachmentOf,
  busiestSecond,
} from './harness';

/** Every netns and link this file creates starts with this. */
const PREFIX = `l${RUN_TAG}`;
const NETWORK = `load-${RUN_TAG}`;
const PODS = 200;
/** How many ADDs run at once. */
const BATCH = 20;
const LIMIT = { framesPerSecond: 20, burst: 5 };
/** Each pod's burst: 3 rounds (one GARP each: IPv4 only, arpOps request), 1 s apart. */
const COUNT = 3;
const INTERVAL_MS = 1000;
/**
 * A round is dropped once waiting for the budget would reach the next round's
 * due time: the drop comes at most the budget's last wait before it (tens of
 * ms for one frame at 20/s). A round dropped as soon as it is held back would
 * come a whole interval earlier.
 */
const DROP_BEFORE_NEXT_MAX_MS = INTERVAL_MS / 2;

/**
 * A round of one attachment the announcer's log names: sent ('announced') or dropped, and when (ms since the epoch).
 */
interface LoggedRound {
  containerId: string;
  round: number;
  at: number;
  outcome: 'announced' | 'dropped' | 'skipped';
}

/** The log records about rounds 2 and later (round 1 is the ADD's), one per round. */
function loggedRounds(log: string): LoggedRound[] {
  const outcomes = { announced: 'announced', 'round dropped': 'dropped', 'rounds skipped': 'skipped' } as const;
  return timedLogRecords(log).flatMap(({ msg, fields, at }) => {
    const outcome = outcomes[msg.split(':')[0] as keyof typeof outcomes];
    const round = Number(fields.round ?? NaN);
    if (outcome === undefined || (outcome === 'announced' && round === 1)) return [];
    return [{ containerId: String(fields.containerId), round, at, outcome }];
  });
}

/** A process's CPU time (user + system) in ms, from /proc/PID/stat. */
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

describe.skipIf(skipIntegration())('the background announcer under load', () => {
  const scope = scopePerTest();

  afterAll(async () => {
    expect(await ownAnnouncerProcesses()).toEqual([]);
    expect(await leftoversAfterTeardown(PREFIX)).toEqual([]);
  }, 60_000);

  it(`${PODS} pods ADDed ${BATCH} at a time under rateLimit {${LIMIT.framesPerSecond}/s, ` +
    `burst ${LIMIT.burst}}: one announcer throughout; ` +
    'every round 1 out before its ADD returns; every later round sent or dropped, exactly; a round ' +
    'dropped only as the next one falls due', async () => {
    const s = scope();
    killStrays(s, { strict: true });
    const files = await announcerFiles(s);
    const net = allocSubnet();
    const bridge = await createBridge(s, { v4Cidr: net.v4Cidr(1), prefix: PREFIX });
    const hosts = Array.from({ length: PODS }, (_, i) => 10 + i);
    const pods = await createStandInFleet(s, { prefix: PREFIX, net, bridge, hosts });
    const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
    const options = { logLevel: 'info', idleExitMs: 2000, rateLimit: LIMIT, count: COUNT, intervalMs: INTERVAL_MS };
    const atts = pods.map((pod, i) =>
      attachmentOf(pod, files, { network: NETWORK, containerId: `${PREFIX}-pod${i}`, options }),
    );

    // After every batch: one announcer, the same one, and it answers.
    const pids = new Set<number>();
    const checkDaemon = async (): Promise<void> => {
      for (const p of await daemonsOf(files.stateDir)) pids.add(p.pid);
      const status = await announcerStatus(files.stateDir);
      expect(status.source).toBe('daemon');
      pids.add(status.pid!);
    };
    const added = await inBatches(
      atts,
      BATCH,
      async (att) => assertCniOk(`announcer ADD ${att.containerId}`, await announcerAdd(s, att)),
      checkDaemon,
    );
    if (pids.size !== 1)
      console.info(
        `announcers seen: ${[...pids].join(', ')}; their own lines:\n${(await files.log())
          .split('\n')
          .filter((l) => /announcer (started|stopped)|ERROR|WARN/.test(l))
          .slice(0, 40)
          .join('\n')}`,
      );
    expect([...pids]).toHaveLength(1);
    const [pid] = pids;

    // Every burst is over (sent or dropped) while the announcer still runs (idleExitMs 2 s).
    const status = await daemonStatus(files.stateDir, (st) => st.attachments.length === 0, {
      timeoutMs: 60_000,
      intervalMs: 200,
      what: 'every later round sent or dropped',
    });
    expect(status.pid).toBe(pid);
    expect((await daemonsOf(files.stateDir)).map((p) => p.pid)).toEqual([pid]);
    const cpu = await cpuMs(pid!);
    const io = await readFile(`/proc/${pid}/io`, 'latin1');
    const reads = /^syscr: (\d+)$/m.exec(io)?.[1];
    const frames = await capture.stop();
    const counters = status.counters!;
    const rounds = loggedRounds(await files.log());

    const perPod = pods.map((pod) => garpsFor(frames, pod.mac, pod.ip));
    const ours = perPod.flat();
    const dropped = rounds.filter((r) => r.outcome === 'dropped');
    // How long before the next round's due time each drop came (t1: the pod's round 1 on the wire).
    const leads = dropped.map((r) => {
      const garps = perPod[atts.findIndex((a) => a.containerId === r.containerId)] ?? [];
      return garps.length > 0 ? ms(garps[0]!) + r.round * INTERVAL_MS - r.at : NaN;
    });
    console.info(
      `${PODS} pods, rateLimit ${LIMIT.framesPerSecond}/s burst ${LIMIT.burst}: ${ours.length} GARPs ` +
        `(busiest second ${busiestSecond(ours)}), ` +
        `later rounds sent ${ours.length - PODS}, dropped ${counters.rateLimited.dropped}, ` +
        `delayed ${counters.rateLimited.delayed}, ` +
        `skipped late ${counters.rounds.skippedLate}, not ready ${counters.rounds.skippedNotReady}, ` +
        `errors ${counters.errors}; ` +
        `ADDs ${Math.min(...added.map((a) => a.exitedAt)) - Math.min(...ours.map(ms))} ` +
        `.. ${Math.max(...added.map((a) => a.exitedAt)) - Math.min(...ours.map(ms))} ms after the first ` +
        `frame, ` +
        `last frame ${Math.max(...ours.map(ms)) - Math.min(...ours.map(ms))} ms after it; the ` +
        `announcer's CPU time ${cpu} ms, read(2) calls ${reads}; drops ${Math.min(...leads).toFixed(0)} ` +
        `.. ${Math.max(...leads).toFixed(0)} ms before the next round was due`,
    );

    // The counters account for every frame and every round.
    expect(counters.frames).toEqual({ garpRequest: ours.length, garpReply: 0, na: 0 });
    expect(counters.rounds).toEqual({ sent: ours.length, skippedNotReady: 0, skippedLate: 0 });
    expect(counters.rateLimited.dropped).toBe(dropped.length);
    expect(counters.errors).toBe(0);
    // The announcer ran every ADD: no CNI process ran its command itself.
    expect(counters.served.ADD).toBe(PODS);
    expect(ours.length + counters.rateLimited.dropped).toBe(PODS * COUNT);
    expect(counters.rateLimited.dropped).toBeGreaterThan(0); // the limit did bite

    for (const [i, garps] of perPod.entries()) {
      const id = atts[i]!.containerId;
      for (const f of garps) expect(f.malformed).toBe(false);
      // Round 1 is on the wire before its ADD returned (capture time, taken by the kernel, before the test saw the
      // exit).
      expect(garps.length).toBeGreaterThanOrEqual(1);
      expect({ id, round1BeforeExit: ms(garps[0]!) <= added[i]!.exitedAt }).toEqual({ id, round1BeforeExit: true });
      // Rounds 2 and 3: each announced or dropped, once; the frames on the wire are round 1 and the announced ones.
      const mine = rounds.filter((r) => r.containerId === id).sort((a, b) => a.round - b.round);
      expect({ id, rounds: mine.map((r) => [r.round, r.outcome]) }).toEqual({
        id,
        rounds: mine.map((r, k) => [k + 2, r.outcome === 'skipped' ? 'not skipped' : r.outcome]),
      });
      expect({ id, rounds: mine.length }).toEqual({ id, rounds: COUNT - 1 });
      expect({ id, onWire: garps.length }).toEqual({
        id,
        onWire: 1 + mine.filter((r) => r.outcome === 'announced').length,
      });
      // A round is dropped only as the next one falls due: never the last, and not long before the next is due.
      const t1 = ms(garps[0]!);
      for (const r of mine.filter((x) => x.outcome === 'dropped')) {
        expect({ id, round: r.round, last: r.round === COUNT }).toEqual({ id, round: r.round, last: false });
        const nextDue = t1 + r.round * INTERVAL_MS;
        expect({ id, round: r.round, droppedBeforeNextDueMs: nextDue - r.at }).toEqual({
          id,
          round: r.round,
          droppedBeforeNextDueMs: expect.toSatisfy((d: number) => d <= DROP_BEFORE_NEXT_MAX_MS),
        });
      }
    }

    // DEL every attachment; the announcer then goes once idle.
    await inBatches(
      atts,
      BATCH,
      async (att) => assertCniOk(`announcer DEL ${att.containerId}`, await announcerDel(att)),
      async () => {},
    );
    await waitDaemonGone(files.stateDir, 10_000);
    expect(await files.stateFiles()).toEqual([]);
  }, 240_000);
});
