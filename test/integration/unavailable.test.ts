// The contract when the node's announcer cannot answer (issue 25), on the real bridge plugin,
// real netns, frames captured on the bridge and counted by tshark. The announcer is SIGSTOPped by
// pid, after the pid is checked to be `announcer daemon <stateDir>` of this run. The CNI process
// never runs a command itself: its trace shows no setns.
//
// The bounds (src/protocol.ts, docs/design.md "The wire protocol"): an ADD waits addWaitMs +
// MARGIN_MS (3 s) for its end, then fails with code 11 naming the announcer's pid; a DEL waits
// BRIEF_MS (2 s), then exits 0 and says so on stderr, its request left queued. Asserted here with
// generous margins: these are upper limits, not speeds.
import { describe, expect, it } from 'vitest';
import { BRIEF_MS, MARGIN_MS } from '../../src/protocol';
import {
  allocSubnet,
  announcerAdd,
  announcerDel,
  assertCniOk,
  attachBridgePod,
  attachmentOf,
  bridgeWithKeeper,
  garpsFor,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  waitFor,
  waitLogged,
  type AnnouncerAttachment,
  type AnnouncerFiles,
  type Scope,
} from './harness';
import { cleanStart, podHeldBehindStarter, waitingForPod } from './harness/executor-steps';
import { setPortState } from './harness/port-hold';
import { announcerStatus } from './harness/daemon';
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
const IDLE_EXIT_MS = 30_000;
/** Slack on each bound: a loaded CI node, process start-up, tshark. */
const SLACK_MS = 3000;
/** This file's announcer options. */
const HOW = { options: { logLevel: 'debug', idleExitMs: IDLE_EXIT_MS } };

describe.skipIf(skipIntegration() || skipUnless('strace', missingTool(['strace'], 'apt-get install strace')))(
  'when the announcer cannot answer (SIGSTOP)',
  () => {
    const scope = scopePerTest(PREFIX);

    /**
     * A pod whose bridge port the test holds in `listening`, an announcer already running (started by another pod's
     * ADD), and a capture on the bridge.
     */
    async function heldPod(s: Scope, files: AnnouncerFiles) {
      const names = { starter: `starter-${RUN_TAG}`, held: `held-${RUN_TAG}` };
      const held = await podHeldBehindStarter(s, files, { prefix: PREFIX, names, options: HOW.options });
      const { pod, capture, starterAtt } = held;
      const trace = await traceFile(s);
      const att: AnnouncerAttachment = { ...held.att, command: tracedAnnouncer(trace) };
      return { pod, att, trace, capture, starterAtt };
    }

    /**
     * Starts the held pod's ADD; resolves with it once the announcer says it waits for the pod, and has been SIGSTOPped
     * there.
     */
    async function stopMidWait(s: Scope, files: AnnouncerFiles, att: AnnouncerAttachment, addWaitMs: number) {
      const adding = announcerAdd(s, att, { count: 3, addWaitMs, readyTimeoutMs: 60_000 });
      const waits = await waitingForPod(files, adding, { what: 'the announcer to say it waits for the pod' });
      expect(waits, 'ADD returned before the announcer waited').toBe(true);
      const stopped = await stopDaemon(s, files.stateDir);
      return { adding, stopped };
    }

    const stoppedAfterTakingTitle =
      'stopped after taking an ADD mid-wait: the shim returns code 11 within its deadline; ' +
      'resumed, nothing of that ADD goes out and no record stays';
    it(stoppedAfterTakingTitle, async () => {
      const { s, files } = await cleanStart(scope);
      const { pod, att, trace, capture, starterAtt } = await heldPod(s, files);
      const addWaitMs = 2000;
      const started = Date.now();
      const { adding, stopped } = await stopMidWait(s, files, att, addWaitMs);
      const add = await adding;
      const took = add.exitedAt - started;
      console.info(
        `failure mode "stopped after taking": ADD code 11 after ${took} ms (deadline ${addWaitMs + MARGIN_MS})`,
      );
      expect(add.code, add.stdout).toBe(1);
      expect(add.json).toMatchObject({ code: 11, msg: expect.stringContaining(`pid ${stopped.pid}`) });
      expect(add.json).toMatchObject({ msg: expect.stringContaining(`no answer within ${addWaitMs + MARGIN_MS} ms`) });
      expect(took).toBeGreaterThanOrEqual(addWaitMs + MARGIN_MS - 100);
      expect(took).toBeLessThanOrEqual(addWaitMs + MARGIN_MS + SLACK_MS);
      expect(await tracedCalls(trace, 'setns')).toEqual([]);

      // The pod forwards before the announcer resumes: had the ADD gone on, round 1 would be on the wire now.
      await setPortState(pod.hostVeth, 'forwarding');
      await stopped.resume();
      await waitLogged(files, 'error', 'ADD failed', { error: /^the caller no longer waits: / });
      expect(await theDaemonOf(files.stateDir)).toBe(stopped.pid);
      // Rounds come every second: two seconds more would show a later one.
      await new Promise((r) => setTimeout(r, 2000));
      expect(await announcerDel(starterAtt)).toMatchObject({ code: 0 });
      await terminateDaemon(files.stateDir);
      expect(garpsFor(await capture.stop(), pod.mac, pod.ip)).toEqual([]);
      expect(await files.stateFiles()).toEqual([]);
      expect(await announcerDel(att)).toMatchObject({ code: 0 });
    }, 60_000);

    it('DEL while stopped: exits 0 within BRIEF_MS, saying so; resumed, the announcer runs it', async () => {
      const { s, files } = await cleanStart(scope);
      const net = allocSubnet();
      const bridge = await bridgeWithKeeper(s, net, { prefix: PREFIX });
      const containerId = `${PREFIX}-del`;
      const pod = await attachBridgePod(s, { prefix: PREFIX, net, bridge, host: 10, containerId, settle: true });
      const att = attachmentOf(pod, files, HOW);
      // Rounds 2 and 3 stay for the background: the record holds the job DEL ends.
      assertCniOk('ADD', await announcerAdd(s, att, { count: 3, intervalMs: 10_000 }));
      expect(await files.stateFiles()).not.toEqual([]);
      const stopped = await stopDaemon(s, files.stateDir);
      const trace = await traceFile(s);
      const started = Date.now();
      const del = await announcerDel({ ...att, command: tracedAnnouncer(trace) });
      expect([del.code, del.stdout]).toEqual([0, '']);
      expect(del.stderr).toContain('DEL left queued or not run');
      console.info(`failure mode "DEL while stopped": exit 0 after ${Date.now() - started} ms`);
      expect(Date.now() - started).toBeLessThanOrEqual(BRIEF_MS + SLACK_MS);
      expect(await tracedCalls(trace, 'setns')).toEqual([]);
      expect(await files.stateFiles()).not.toEqual([]);
      await stopped.resume();
      await waitFor(async () => (await files.stateFiles()).length === 0, { what: 'the queued DEL to run' });
      expect((await announcerStatus(files.stateDir)).counters?.served).toMatchObject({ ADD: 1, DEL: 1 });
      await terminateDaemon(files.stateDir);
    }, 60_000);
  },
);
