// One writer of a record at a time (issue 25): two ADDs of one attachment reach
// the announcer, their one executor, while the first waits for its pod. The
// announcer's in-memory attachment lock orders them: the record ends whole and
// valid, with the last ADD's job, and the frames on the bridge are the first
// ADD's round 1 and the last ADD's burst. Neither CNI process enters the pod.
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkRecord } from '../../src/announce/record-schema';
import {
  announcerAdd,
  announcerDel,
  assertCniOk,
  garpsFor,
  ms,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  waitLogged,
  logRecords,
} from './harness';
import { cleanStart, podHeldBehindStarter, waitingForPod } from './harness/executor-steps';
import { terminateDaemon, traceFile, tracedAnnouncer, tracedCalls } from './harness/held-announcer';
import { setTimeout as sleep } from 'node:timers/promises';
import { setPortState } from './harness/port-hold';
import { missingTool, skipUnless } from '../support/skip';

/** Every netns and link this file creates starts with this. */
const PREFIX = `rw${RUN_TAG}`;
/** Long enough that the announcer is not idle while the test runs. */
const IDLE_EXIT_MS = 10_000;
/** The first ADD's burst and the last one's: different, so the record tells whose job it holds. */
const FIRST = { count: 2, intervalMs: 1000 };
const LAST = { count: 4, intervalMs: 400 };

describe.skipIf(skipIntegration() || skipUnless('strace', missingTool(['strace'], 'apt-get install strace')))(
  'one writer of a record at a time',
  () => {
    const scope = scopePerTest(PREFIX);

    const twoADDsOfTitle =
      'two ADDs of one attachment, the first waiting for its pod: one after the ' +
      "other, the record whole with the last ADD's job";
    it(twoADDsOfTitle, async () => {
      const { s, files } = await cleanStart(scope);
      const options = { logLevel: 'debug', idleExitMs: IDLE_EXIT_MS, addWaitMs: 20_000, readyTimeoutMs: 60_000 };
      const names = { starter: 'starter', held: 'raced' };
      const held = await podHeldBehindStarter(s, files, { prefix: PREFIX, names, options });
      const { capture, starterAtt, pod, att: base } = held;
      const [firstTrace, lastTrace] = [await traceFile(s), await traceFile(s)];
      const firstAtt = { ...base, command: tracedAnnouncer(firstTrace) };
      const lastAtt = { ...base, command: tracedAnnouncer(lastTrace) };
      const recordFile = join(files.stateDir, `${pod.containerId}@eth0.json`);

      // The first ADD waits for the pod, holding the attachment's lock.
      const first = announcerAdd(s, firstAtt, FIRST);
      expect(await waitingForPod(files, first, { what: 'the first ADD to wait for the pod' })).toBe(true);
      // The last ADD queues behind it: nothing is written meanwhile.
      const last = announcerAdd(s, lastAtt, LAST);
      await sleep(1000);
      expect(await readdir(files.stateDir)).not.toContain(`${pod.containerId}@eth0.json`);

      await setPortState(pod.hostVeth, 'forwarding');
      const [firstOut, lastOut] = await Promise.all(
        [first, last].map((p) => p.then((out) => assertCniOk('a raced ADD', out))),
      );
      expect(firstOut).toBeDefined();
      expect(lastOut).toBeDefined();
      // One after the other, in the announcer that ran both: the first ADD's round 1 (of FIRST.count) is logged before
      // the last's (of LAST.count). Not by the callers' exit times: both end within milliseconds, and when the test
      // sees each exit is up to its event loop and strace's teardown (that comparison failed by 2 ms in a CI run).
      const said = logRecords(await files.log());
      const roundOne = (n: number): number =>
        said.findIndex(
          ({ msg, fields: f }) =>
            msg === 'announced' && f.containerId === pod.containerId && f.round === 1 && f.of === n,
        );
      expect(roundOne(FIRST.count)).toBeGreaterThanOrEqual(0);
      expect(roundOne(FIRST.count)).toBeLessThan(roundOne(LAST.count));
      // The announcer ran both.
      for (const trace of [firstTrace, lastTrace]) expect(await tracedCalls(trace, 'setns')).toEqual([]);

      const checked = checkRecord(JSON.parse(await readFile(recordFile, 'utf8')));
      expect(checked.ok, checked.ok ? '' : checked.problem).toBe(true);
      const job = checked.ok ? checked.record.job : undefined;
      expect(job?.schedule).toEqual(Array.from({ length: LAST.count }, (_, i) => i * LAST.intervalMs));
      expect((await readdir(files.stateDir)).filter((f) => f.startsWith(pod.containerId)).sort()).toEqual([
        `${pod.containerId}@eth0.json`,
      ]);

      // The first ADD's round 1, then the last ADD's burst; the first ADD's round 2 never goes out.
      const lastRound = { daemon: /^\d+$/, containerId: pod.containerId, round: LAST.count, of: LAST.count };
      await waitLogged(files, 'info', 'announced', lastRound, { timeoutMs: 10_000 });
      for (const a of [lastAtt, firstAtt, starterAtt]) expect(await announcerDel(a)).toMatchObject({ code: 0 });
      await terminateDaemon(files.stateDir);
      const garps = garpsFor(await capture.stop(), pod.mac, pod.ip);
      expect(garps).toHaveLength(1 + LAST.count);
      expect(ms(garps[0]!)).toBeLessThanOrEqual(firstOut!.exitedAt);
      expect(ms(garps[1]!)).toBeLessThanOrEqual(lastOut!.exitedAt);
    });
  },
);
