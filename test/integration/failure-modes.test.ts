// The announcer's failure modes not held by SIGSTOP after it took a request (unavailable.test.ts
// has those; issue 25, docs/design.md "When the announcer cannot answer"): absent and started on
// demand, SIGSTOPped before it takes the request, SIGKILLed while an ADD waits for its pod. Each
// bound is asserted as a generous upper limit, each pod's frames are counted on the bridge by
// tshark, and each CNI process runs under strace: no setns or flock, it ran no command itself.
import { describe, expect, it } from 'vitest';
import { MARGIN_MS, START_MS } from '../../src/protocol';
import {
  announcerAdd,
  announcerDel,
  assertCniOk,
  daemonsOf,
  garpsFor,
  killDaemon,
  ms,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  waitFor,
  waitLogged,
  writeNodeSettings,
  type AnnouncerFiles,
  type Scope,
} from './harness';
import { announcerStatus } from './harness/daemon';
import {
  cleanStart,
  inProcessCalls,
  startingAdd,
  tracedAdd,
  tracedPodsOnBridge,
  waitingForPod,
} from './harness/executor-steps';
import { setPortState } from './harness/port-hold';
import { stopDaemon, terminateDaemon, theDaemonOf, tracedCalls } from './harness/held-announcer';
import { missingTool, skipUnless } from '../support/skip';

/** Every netns and link this file creates starts with this. */
const PREFIX = `fm${RUN_TAG}`;
/** Slack on each bound: a loaded CI node, process start-up, tshark. */
const SLACK_MS = 3000;
/** Each pod's burst: round 2 a second after round 1, so a late round shows within the test. */
const BURST = { count: 3, intervalMs: 1000 };

describe.skipIf(skipIntegration() || skipUnless('strace', missingTool(['strace'], 'apt-get install strace')))(
  'failure modes of the node announcer',
  () => {
    const scope = scopePerTest(PREFIX);

    /** A bridge with a capture on it, and `n` settled pods on it, each with its own trace file. */
    async function podsOnBridge(s: Scope, files: AnnouncerFiles, names: readonly string[]) {
      // The announcers' own lines (a dropped request) go to the node's log: the network's file here.
      writeNodeSettings(files.stateDir, { idleExitMs: 30_000, logFile: files.logFile, logLevel: 'debug' });
      const pods = names.map((name) => ({ name }));
      return tracedPodsOnBridge(s, files, { prefix: PREFIX, pods, options: { logLevel: 'debug' } });
    }

    const absentADDStartsTitle =
      'absent: the ADD starts it on demand and succeeds within START_MS; ' +
      'round 1 once, before ADD returns; served.ADD 1';
    it(absentADDStartsTitle, async () => {
      const { s, files } = await cleanStart(scope);
      const { capture, pods } = await podsOnBridge(s, files, ['cold']);
      const { pod, att } = pods[0]!;
      expect(await daemonsOf(files.stateDir)).toEqual([]);
      const started = Date.now();
      const { add, inProcess } = await tracedAdd(s, pods[0]!, BURST, 'cold ADD');
      const took = add.exitedAt - started;
      expect(inProcess).toEqual([]);
      // The shim tried the socket three times: absent; absent once more, its start marker taken; then, told by the
      // ready line that the announcer it spawned listens, once (no retries while it started).
      const tries = (await tracedCalls(pods[0]!.trace, 'connect')).filter((l) => /announcer\.sock"/.test(l));
      expect(tries.map((l) => /= (-1 \w+|\d+)/.exec(l)?.[1])).toEqual(['-1 ENOENT', '-1 ENOENT', '0']);
      expect((await announcerStatus(files.stateDir)).counters?.served).toMatchObject({ ADD: 1 });
      await waitFor(async () => (await capture.count()) >= BURST.count, { timeoutMs: 10_000, what: 'the burst' });
      expect(await announcerDel(att)).toMatchObject({ code: 0 });
      await terminateDaemon(files.stateDir);
      const garps = garpsFor(await capture.stop(), pod.mac, pod.ip);
      console.info(`failure mode "absent": cold ADD took ${took} ms`);
      expect(took).toBeLessThanOrEqual(START_MS + SLACK_MS);
      expect(garps).toHaveLength(BURST.count);
      expect(garps.filter((f) => ms(f) <= add.exitedAt)).toHaveLength(1); // round 1, once, before ADD returned
    }, 60_000);

    const stoppedBeforeItTitle =
      'stopped before it takes the request: code 11 within the deadline; ' +
      'resumed, it drops the ADD: no frame, no record';
    it(stoppedBeforeItTitle, async () => {
      const { s, files } = await cleanStart(scope);
      const { capture, pods } = await podsOnBridge(s, files, ['starter', 'queued']);
      const [starter, queued] = pods;
      await startingAdd(s, starter!.att);
      const stopped = await stopDaemon(s, files.stateDir);
      const addWaitMs = 1000;
      const started = Date.now();
      // The pod is ready: had the announcer taken the request, round 1 would be out at once.
      const add = await announcerAdd(s, queued!.att, { ...BURST, addWaitMs });
      const took = add.exitedAt - started;
      expect(add.code, add.stdout).toBe(1);
      expect(add.json).toMatchObject({ code: 11, msg: expect.stringContaining(`pid ${stopped.pid}`) });
      expect(await inProcessCalls(queued!.trace)).toEqual([]);
      await stopped.resume();
      await waitLogged(files, 'warn', 'dropped a command its sender no longer waits for');
      // Rounds come every second: two seconds more would show a late one.
      await new Promise((r) => setTimeout(r, 2000));
      expect(await theDaemonOf(files.stateDir)).toBe(stopped.pid);
      expect(await files.stateFiles(), 'records once the starter burst is over').toEqual([]);
      expect(await announcerDel(starter!.att)).toMatchObject({ code: 0 });
      await terminateDaemon(files.stateDir);
      const frames = await capture.stop();
      console.info(`failure mode "stopped before taking": ADD code 11 after ${took} ms`);
      expect(took).toBeGreaterThanOrEqual(addWaitMs + MARGIN_MS - 100); // the whole deadline, no less
      expect(took).toBeLessThanOrEqual(addWaitMs + MARGIN_MS + SLACK_MS);
      expect(garpsFor(frames, queued!.pod.mac, queued!.pod.ip)).toEqual([]);
      expect(await announcerDel(queued!.att)).toMatchObject({ code: 0 });
    }, 60_000);

    const killedWhileADDTitle =
      'killed while an ADD waits for its pod: code 11 at once; no frame of that ADD ' +
      'after; the next call starts another that works';
    it(killedWhileADDTitle, async () => {
      const { s, files } = await cleanStart(scope);
      const { capture, pods } = await podsOnBridge(s, files, ['starter', 'held', 'next']);
      const [starter, held, next] = pods;
      await startingAdd(s, starter!.att);
      await setPortState(held!.pod.hostVeth, 'listening');
      const adding = announcerAdd(s, held!.att, { ...BURST, addWaitMs: 20_000, readyTimeoutMs: 60_000 });
      expect(await waitingForPod(files, adding)).toBe(true);
      const killedAt = Date.now();
      const killed = await killDaemon(files.stateDir);
      const add = await adding;
      const took = add.exitedAt - killedAt;
      expect(add.code, add.stdout).toBe(1);
      // Gone, it holds no lock: the message says the connection ended before the answer, the ADD perhaps run.
      expect(add.json).toMatchObject({ code: 11, msg: expect.stringContaining('closed the connection') });
      expect(killed).toBeGreaterThan(0);
      expect(await inProcessCalls(held!.trace)).toEqual([]);
      // The pod forwards now: a round of the killed ADD sent by anyone would be on the wire.
      await setPortState(held!.pod.hostVeth, 'forwarding');
      const nextAdd = assertCniOk('the next ADD', await announcerAdd(s, next!.att, BURST));
      const successor = await theDaemonOf(files.stateDir);
      expect(successor).not.toBe(killed);
      expect(await inProcessCalls(next!.trace)).toEqual([]);
      expect((await announcerStatus(files.stateDir)).counters?.served).toMatchObject({ ADD: 1 });
      // The starter's one round and the next pod's burst.
      await waitFor(async () => (await capture.count()) >= 1 + BURST.count, {
        timeoutMs: 10_000,
        what: "the next pod's burst",
      });
      expect(await announcerDel(next!.att)).toMatchObject({ code: 0 });
      expect(await announcerDel(held!.att)).toMatchObject({ code: 0 });
      expect(await announcerDel(starter!.att)).toMatchObject({ code: 0 });
      await terminateDaemon(files.stateDir);
      const frames = await capture.stop();
      console.info(`failure mode "killed mid-command": ADD code 11 ${took} ms after SIGKILL`);
      expect(took).toBeLessThanOrEqual(SLACK_MS);
      expect(garpsFor(frames, held!.pod.mac, held!.pod.ip).filter((f) => ms(f) >= killedAt)).toEqual([]);
      const nextGarps = garpsFor(frames, next!.pod.mac, next!.pod.ip);
      expect(nextGarps).toHaveLength(BURST.count);
      expect(nextGarps.filter((f) => ms(f) <= nextAdd.exitedAt)).toHaveLength(1);
      expect(await files.stateFiles()).toEqual([]);
    }, 90_000);
  },
);
