// One writer of a record at a time (issue 18, "One way for each thing"): a
// fallback ADD, run in-process by the CNI process, and the announcer's ADD of
// the same attachment race for its record. The attachment's flock orders
// them: the record ends whole and valid, with the last ADD's job, and the
// frames on the bridge are the first ADD's round 1 and the last ADD's burst.
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkRecord } from '../../src/announce/record-schema';
import {
  allocSubnet,
  announcerAdd,
  announcerDel,
  announcerFiles,
  assertCniOk,
  attachBridgePod,
  bridgeWithKeeper,
  garpsFor,
  killStrays,
  ms,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  startCapture,
  waitFor,
  type AnnouncerAttachment,
  type AnnouncerOutput,
} from './harness';
import {
  flockHolders,
  stopDaemon,
  terminateDaemon,
  theDaemonOf,
  traceFile,
  tracedAnnouncer,
  tracedCalls,
  tracedPid,
  traceRunning,
} from './harness/held-announcer';
import { setPortState } from './harness/port-hold';
import { missingTool, skipUnless } from '../support/skip';

/** Every netns and link this file creates starts with this. */
const PREFIX = `rw${RUN_TAG}`;
/** Long enough that the announcer, stopped for a while, is not idle once resumed. */
const IDLE_EXIT_MS = 10_000;
/** The debug line of an ADD waiting for its pod (src/announce/first-round.ts). */
const WAITING = 'DEBUG pod not ready: waiting for it';
/** The first ADD's burst and the last one's: different, so the record tells whose job it holds. */
const FIRST = { count: 2, intervalMs: 1000 };
const LAST = { count: 4, intervalMs: 400 };
/** A strace line of a flock(2) that found the lock taken. */
const BUSY = /LOCK_NB\)\s+= -1 EAGAIN/;

describe.skipIf(skipIntegration() || skipUnless('strace', missingTool(['strace'], 'apt-get install strace')))(
  'one writer of a record at a time',
  () => {
    const scope = scopePerTest(PREFIX);

    it("a fallback ADD holding the attachment (pod not ready) and the announcer's ADD of the same attachment: one after the other, the record whole with the last ADD's job", async () => {
      const s = scope();
      killStrays(s, { strict: true });
      const files = await announcerFiles(s);
      const net = allocSubnet();
      const bridge = await bridgeWithKeeper(s, net, { prefix: PREFIX });
      const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
      const options = { logLevel: 'debug', idleExitMs: IDLE_EXIT_MS, addWaitMs: 20_000, readyTimeoutMs: 60_000 };
      const starter = await attachBridgePod(s, {
        prefix: PREFIX,
        net,
        bridge,
        host: 10,
        containerId: `${PREFIX}-starter`,
        settle: true,
      });
      const starterAtt: AnnouncerAttachment = {
        mainConf: starter.conf,
        prevResult: starter.result,
        containerId: starter.containerId,
        netns: starter.netns.path,
        files,
        options,
      };
      assertCniOk('the ADD that starts the announcer', await announcerAdd(s, starterAtt, { count: 1 }));

      const pod = await attachBridgePod(s, {
        prefix: PREFIX,
        net,
        bridge,
        host: 11,
        containerId: `${PREFIX}-raced`,
        settle: true,
      });
      await setPortState(pod.hostVeth, 'listening');
      const base: AnnouncerAttachment = {
        mainConf: pod.conf,
        prevResult: pod.result,
        containerId: pod.containerId,
        netns: pod.netns.path,
        files,
        options,
      };
      const [firstTrace, lastTrace] = [await traceFile(s), await traceFile(s)];
      const firstAtt = { ...base, command: tracedAnnouncer(firstTrace) };
      const lastAtt = { ...base, command: tracedAnnouncer(lastTrace) };
      const lockFile = join(files.stateDir, `${pod.containerId}@eth0.lock`);
      const recordFile = join(files.stateDir, `${pod.containerId}@eth0.json`);

      // The first ADD finds the announcer stopped: no ack, so it runs in-process, and waits for the pod holding the
      // attachment's lock.
      const stopped = await stopDaemon(s, files.stateDir);
      const first = announcerAdd(s, firstAtt, FIRST);
      const ended = settledFlag(first);
      await waitFor(async () => ended.settled || (await files.log()).includes(WAITING), {
        timeoutMs: 20_000,
        what: 'the first ADD to wait for the pod',
      });
      const firstPid = await tracedPid(firstTrace);
      expect(ended.settled).toBe(false);
      expect((await tracedCalls(firstTrace, 'setns')).length).toBeGreaterThan(0);
      expect(await flockHolders(lockFile)).toEqual([firstPid]);

      // Resumed, the announcer takes the second ADD, which waits for the lock the fallback holds: nothing is written
      // meanwhile.
      await stopped.resume();
      const daemonTrace = await traceFile(s);
      const tracer = await traceRunning(s, await theDaemonOf(files.stateDir), ['flock'], daemonTrace);
      const last = announcerAdd(s, lastAtt, LAST);
      await waitFor(async () => (await tracedCalls(daemonTrace, 'flock')).some((l) => BUSY.test(l)), {
        timeoutMs: 10_000,
        what: "the announcer's ADD to find the lock taken",
      });
      await tracer.detach();
      expect(await flockHolders(lockFile)).toEqual([firstPid]);
      expect(await readdir(files.stateDir)).not.toContain(`${pod.containerId}@eth0.json`);

      await setPortState(pod.hostVeth, 'forwarding');
      const [firstOut, lastOut] = await Promise.all(
        [first, last].map((p) => p.then((out) => assertCniOk('a raced ADD', out))),
      );
      expect(firstOut!.exitedAt).toBeLessThanOrEqual(lastOut!.exitedAt);
      expect(await tracedCalls(lastTrace, 'setns')).toEqual([]); // the announcer ran it

      const checked = checkRecord(JSON.parse(await readFile(recordFile, 'utf8')));
      expect(checked.ok, checked.ok ? '' : checked.problem).toBe(true);
      const job = checked.ok ? checked.record.job : undefined;
      expect(job?.schedule).toEqual(Array.from({ length: LAST.count }, (_, i) => i * LAST.intervalMs));
      expect((await readdir(files.stateDir)).filter((f) => f.startsWith(pod.containerId)).sort()).toEqual([
        `${pod.containerId}@eth0.json`,
        `${pod.containerId}@eth0.lock`,
      ]);

      // The first ADD's round 1, then the last ADD's burst; the first ADD's round 2 never goes out.
      await waitFor(
        async () =>
          new RegExp(
            `INFO announced daemon=\\d+ containerId=${pod.containerId} .*round=${LAST.count} of=${LAST.count}`,
          ).test(await files.log()) || undefined,
        { timeoutMs: 10_000, what: "the last ADD's last round" },
      );
      for (const a of [lastAtt, firstAtt, starterAtt]) expect(await announcerDel(a)).toMatchObject({ code: 0 });
      await terminateDaemon(files.stateDir);
      const garps = garpsFor(await capture.stop(), pod.mac, pod.ip);
      expect(garps).toHaveLength(1 + LAST.count);
      expect(ms(garps[0]!)).toBeLessThanOrEqual(firstOut!.exitedAt);
      expect(ms(garps[1]!)).toBeLessThanOrEqual(lastOut!.exitedAt);
    });
  },
);

/** A flag that turns true once `p` settles (either way; the caller awaits p for its outcome). */
function settledFlag(p: Promise<AnnouncerOutput>): { settled: boolean } {
  const flag = { settled: false };
  p.then(
    () => (flag.settled = true),
    () => (flag.settled = true),
  );
  return flag;
}
