// The shim's fallback against a hung announcer (issue 18, "Start and
// fallback"), on the real bridge plugin, real netns, frames captured on the
// bridge and counted by tshark. The announcer is SIGSTOPped by pid, after the
// pid is checked to be `announcer daemon <stateDir>` of this run.
//
// The bound, documented rather than asserted as time: a request the announcer
// never acks costs ACK_MS (300 ms, src/shim/wire.ts) before the shim runs the
// command in-process; one it acked and then went silent on costs SILENCE_MS
// (500 ms) after its last beat. The command then costs what an in-process ADD
// costs, plus ACK_MS for the round-1 report (`count`/`sync`) nobody answers.
import { describe, expect, it } from 'vitest';
import {
  OLD_MAC,
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
  neighEntry,
  plantStale,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  startCapture,
  waitFor,
  type AnnouncerAttachment,
  type AnnouncerFiles,
  type BridgePod,
  type Scope,
} from './harness';
import { setPortState } from './harness/port-hold';
import {
  stopDaemon,
  terminateDaemon,
  theDaemonOf,
  traceFile,
  tracedAnnouncer,
  tracedCalls,
} from './harness/held-announcer';
import { skipUnless, missingTool } from '../support/skip';

/** Every netns and link this file creates starts with this. */
const PREFIX = `sf${RUN_TAG}`;
/** Long enough that a stopped announcer, once resumed, is not idle yet: it must read what queued up meanwhile. */
const IDLE_EXIT_MS = 10_000;
/** The announcer's debug line while ADD waits for the pod (src/announce/first-round.ts). */
const WAITING = 'DEBUG pod not ready: waiting for it';
/** Its line when addWaitMs ends first: round 1 goes to the background. */
const DEFERRED = 'INFO pod not ready yet: announcing from the background once it is';

function attachmentOf(pod: BridgePod, files: AnnouncerFiles): AnnouncerAttachment {
  return {
    mainConf: pod.conf,
    prevResult: pod.result,
    containerId: pod.containerId,
    netns: pod.netns.path,
    files,
    options: { logLevel: 'debug', idleExitMs: IDLE_EXIT_MS },
  };
}

describe.skipIf(skipIntegration() || skipUnless('strace', missingTool(['strace'], 'apt-get install strace')))(
  'the shim falls back when the announcer hangs (SIGSTOP)',
  () => {
    const scope = scopePerTest(PREFIX);

    it('stopped before the request: ADD runs in-process, round 1 on the wire before it returns; resumed, the announcer drops the stale request and serves the next', async () => {
      const s = scope();
      killStrays(s, { strict: true });
      const files = await announcerFiles(s);
      const net = allocSubnet();
      const bridge = await bridgeWithKeeper(s, net, { prefix: PREFIX });
      const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
      const pod = (host: number, tag: string) =>
        attachBridgePod(s, { prefix: PREFIX, net, bridge, host, containerId: `${PREFIX}-${tag}`, settle: true });

      // A first ADD starts the announcer, which runs it.
      const first = await pod(10, 'first');
      const firstAtt = attachmentOf(first, files);
      assertCniOk('first ADD', await announcerAdd(s, firstAtt, { count: 1 }));
      const stopped = await stopDaemon(s, files.stateDir);
      // A pod reusing an IP: the node's entry points at the MAC of the pod that left.
      await plantStale(bridge, net.v4(11), OLD_MAC);
      const reused = await pod(11, 'reused');
      const trace = await traceFile(s);
      const att = { ...attachmentOf(reused, files), command: tracedAnnouncer(trace) };
      const add = assertCniOk('ADD with the announcer stopped', await announcerAdd(s, att, { count: 1 }));
      const entry = await neighEntry(bridge, reused.ip);
      const beforeResume = await capture.count();

      // In-process: this CNI process entered the pod's netns itself (the shim never does).
      expect((await tracedCalls(trace, 'setns')).length).toBeGreaterThan(0);
      expect(entry?.mac, `the node's entry for ${reused.ip} once ADD returned`).toBe(reused.mac);

      await stopped.resume();
      // A later request is served by the same announcer; it ran nothing of the stale one.
      const later = await pod(12, 'later');
      const laterTrace = await traceFile(s);
      const laterAtt = { ...attachmentOf(later, files), command: tracedAnnouncer(laterTrace) };
      assertCniOk('ADD once resumed', await announcerAdd(s, laterAtt, { count: 1 }));
      expect(await tracedCalls(laterTrace, 'setns')).toEqual([]);
      expect(await theDaemonOf(files.stateDir)).toBe(stopped.pid);
      await waitFor(async () => (await capture.count()) >= beforeResume + 1, { what: "the later pod's GARP" });
      for (const a of [firstAtt, att, laterAtt]) expect(await announcerDel(a)).toMatchObject({ code: 0 });
      await terminateDaemon(files.stateDir);
      const frames = await capture.stop();

      const garps = garpsFor(frames, reused.mac, reused.ip);
      expect(garps, 'GARPs of the pod ADDed while the announcer was stopped').toHaveLength(1);
      expect(ms(garps[0]!)).toBeLessThanOrEqual(add.exitedAt);
      expect(garpsFor(frames, later.mac, later.ip)).toHaveLength(1);
      expect(garpsFor(frames, first.mac, first.ip)).toHaveLength(1);
    });

    /**
     * A pod whose bridge port the test holds in `listening`, an announcer already running (started by another pod's
     * ADD), and a capture on the bridge.
     */
    async function heldPod(s: Scope, files: AnnouncerFiles) {
      const net = allocSubnet();
      const bridge = await bridgeWithKeeper(s, net, { prefix: PREFIX });
      const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
      const starter = await attachBridgePod(s, {
        prefix: PREFIX,
        net,
        bridge,
        host: 10,
        containerId: `${PREFIX}-starter-${RUN_TAG}`,
        settle: true,
      });
      const starterAtt = attachmentOf(starter, files);
      assertCniOk('the ADD that starts the announcer', await announcerAdd(s, starterAtt, { count: 1 }));
      const pod = await attachBridgePod(s, {
        prefix: PREFIX,
        net,
        bridge,
        host: 11,
        containerId: `${PREFIX}-held-${RUN_TAG}`,
        settle: true,
      });
      await setPortState(pod.hostVeth, 'listening');
      const trace = await traceFile(s);
      const att: AnnouncerAttachment = { ...attachmentOf(pod, files), command: tracedAnnouncer(trace) };
      return { pod, att, trace, capture, starterAtt };
    }

    /**
     * Starts the held pod's ADD; resolves with it once the announcer says it waits for the pod, and has been SIGSTOPped
     * there.
     */
    async function stopMidWait(s: Scope, files: AnnouncerFiles, att: AnnouncerAttachment, addWaitMs: number) {
      const adding = announcerAdd(s, att, { count: 1, addWaitMs, readyTimeoutMs: 60_000 });
      let exited = false;
      adding.then(
        () => (exited = true),
        () => (exited = true),
      );
      await waitFor(async () => exited || (await files.log()).includes(WAITING), {
        timeoutMs: 20_000,
        what: 'the announcer to say it waits for the pod',
      });
      expect(exited, 'ADD returned before the announcer waited').toBe(false);
      // Acked: the CNI process has not entered the pod (the announcer runs the command).
      const stopped = await stopDaemon(s, files.stateDir);
      return { adding, stopped };
    }

    /**
     * Waits until the traced CNI process, run in-process by now, finds the attachment's lock taken (flock LOCK_NB
     * fails).
     */
    async function fallbackWaitsForLock(trace: string): Promise<void> {
      await waitFor(async () => (await tracedCalls(trace, 'flock')).some((l) => /LOCK_NB\)\s+= -1 EAGAIN/.test(l)), {
        timeoutMs: 10_000,
        what: 'the fallback to wait for the attachment lock',
      });
    }

    it('stopped after the ack, mid-wait, then resumed: the fallback waits for the attachment lock the announcer holds, then runs ADD again in-process; round 1 twice, once per run', async () => {
      const s = scope();
      killStrays(s, { strict: true });
      const files = await announcerFiles(s);
      const { pod, att, trace, capture, starterAtt } = await heldPod(s, files);
      const { adding, stopped } = await stopMidWait(s, files, att, 20_000);
      // 500 ms of silence later the shim runs ADD itself: it blocks on the lock of the attachment, held by the stopped
      // announcer's ADD.
      await fallbackWaitsForLock(trace);
      expect(await tracedCalls(trace, 'setns')).toEqual([]);
      // Frames can pass the port from the moment the command that lets it forward starts.
      const forwardedAt = Date.now();
      await setPortState(pod.hostVeth, 'forwarding');
      await stopped.resume();
      const add = assertCniOk('ADD that fell back mid-wait', await adding);

      expect((await tracedCalls(trace, 'setns')).length).toBeGreaterThan(0);
      expect(add.json).toEqual(pod.result);
      for (const a of [att, starterAtt]) expect(await announcerDel(a)).toMatchObject({ code: 0 });
      await terminateDaemon(files.stateDir);
      const garps = garpsFor(await capture.stop(), pod.mac, pod.ip);
      // The announcer's run (resumed, the pod ready) sent round 1 and let go of the lock; the fallback's repeat ADD
      // sent it again.
      expect(garps).toHaveLength(2);
      for (const f of garps) expect(ms(f)).toBeGreaterThanOrEqual(forwardedAt);
      expect(ms(garps[1]!)).toBeLessThanOrEqual(add.exitedAt);
    });

    it('stopped after the ack, mid-wait, and left stopped: the fallback gives up on the lock after addWaitMs + 10 s with code 11 (try again later); resumed, the announcer defers round 1 and sends it once the pod forwards', async () => {
      const s = scope();
      killStrays(s, { strict: true });
      const files = await announcerFiles(s);
      const { pod, att, trace, capture, starterAtt } = await heldPod(s, files);
      const { adding, stopped } = await stopMidWait(s, files, att, 2000);
      await fallbackWaitsForLock(trace);
      const add = await adding;
      expect(add.code, add.stdout).toBe(1);
      expect(add.json).toMatchObject({
        code: 11,
        msg: expect.stringMatching(/another command on this attachment still runs after 12000 ms/),
      });
      expect(await tracedCalls(trace, 'setns')).toEqual([]);

      // Resumed, the announcer's ADD finds its addWaitMs spent: it defers round 1 to the background, which sends it
      // once the pod forwards.
      await stopped.resume();
      await waitFor(async () => (await files.log()).includes(DEFERRED), {
        what: "the announcer's ADD to defer round 1",
      });
      // Frames can pass the port from the moment the command that lets it forward starts.
      const forwardedAt = Date.now();
      await setPortState(pod.hostVeth, 'forwarding');
      await waitFor(
        async () => /INFO announced daemon=\d+ containerId=\S+-held-\S+ .*deferred=true/.test(await files.log()),
        { what: 'the deferred round 1' },
      );
      expect(await theDaemonOf(files.stateDir)).toBe(stopped.pid);
      // The runtime DELs the failed ADD.
      for (const a of [att, starterAtt]) expect(await announcerDel(a)).toMatchObject({ code: 0 });
      await terminateDaemon(files.stateDir);
      const garps = garpsFor(await capture.stop(), pod.mac, pod.ip);
      expect(garps).toHaveLength(1);
      expect(ms(garps[0]!)).toBeGreaterThanOrEqual(forwardedAt);
      expect(await files.stateFiles()).toEqual([]);
    }, 60_000);
  },
);
