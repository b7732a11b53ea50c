// The named recovery of a hung announcer a CNI call started (issue 25, docs/design.md "A hung
// announcer a call started"): the announcer is SIGSTOPped by pid (checked to be `announcer daemon
// <stateDir>` of this run); once its progress stamp is older than HUNG_AFTER_MS, the next call that
// gets no answer by its deadline proves it ours and hung, and SIGKILLs it by pid; the call after
// starts a new announcer and succeeds. A process that is not ours, holding nothing, is never
// signalled. Bounds are upper limits with generous margins.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { HUNG_AFTER_MS } from '../../src/shim/replace-hung';
import { MARGIN_MS } from '../../src/protocol';
import {
  allocSubnet,
  announcerAdd,
  announcerDel,
  assertCniOk,
  attachBridgePod,
  attachmentOf,
  bridgeWithKeeper,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  waitFor,
  type AnnouncerAttachment,
  type BridgePod,
} from './harness';
import { cleanStart, startingAdd } from './harness/executor-steps';
import { processState, stopDaemon, terminateDaemon, theDaemonOf } from './harness/held-announcer';

/** Every netns and link this file creates starts with this. */
const PREFIX = `hr${RUN_TAG}`;
const ADD_WAIT_MS = 1000;
/** This file's announcer options. */
const HOW = { options: { logLevel: 'debug', idleExitMs: 60_000 } };

describe.skipIf(skipIntegration())('a hung announcer a call started', () => {
  const scope = scopePerTest(PREFIX);

  const stoppedForHUNGTitle =
    `stopped for HUNG_AFTER_MS: the next call that gets no answer kills it (SIGKILL, by pid), the call ` +
    `after starts a new one and succeeds; a process not ours is never signalled`;
  it(stoppedForHUNGTitle, async () => {
    const { s, files } = await cleanStart(scope);
    const net = allocSubnet();
    const bridge = await bridgeWithKeeper(s, net, { prefix: PREFIX });
    const pods: BridgePod[] = [];
    for (const host of [10, 11])
      pods.push(
        await attachBridgePod(s, { prefix: PREFIX, net, bridge, host, containerId: `${PREFIX}-${host}`, settle: true }),
      );
    const atts: AnnouncerAttachment[] = pods.map((p) => attachmentOf(p, files, HOW));
    const [first, second] = atts as [AnnouncerAttachment, AnnouncerAttachment];
    await startingAdd(s, first);
    // A process that is not ours and holds nothing: it must never be signalled.
    const bystander = spawn('sleep', ['600'], { stdio: 'ignore' });
    s.defer(() => void bystander.kill('SIGKILL'), `bystander ${bystander.pid}`);
    const stopped = await stopDaemon(s, files.stateDir);
    const stoppedAt = Date.now();

    // Within HUNG_AFTER_MS of its last stamp, a call that gets no answer replaces nothing.
    const early = await announcerAdd(s, second, { count: 1, addWaitMs: ADD_WAIT_MS });
    expect(early.json).toMatchObject({
      code: 11,
      msg: expect.stringContaining(`not replaced: pid ${stopped.pid} made progress`),
    });
    expect(await processState(stopped.pid)).toBe('T');

    await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + HUNG_AFTER_MS + 500 - Date.now())));
    const started = Date.now();
    const failed = await announcerAdd(s, second, { count: 1, addWaitMs: ADD_WAIT_MS });
    expect(failed.json).toMatchObject({
      code: 11,
      msg: expect.stringContaining(`pid ${stopped.pid} made no progress for ${HUNG_AFTER_MS} ms: killed (SIGKILL)`),
    });
    expect(failed.exitedAt - started).toBeLessThanOrEqual(ADD_WAIT_MS + MARGIN_MS + 3000);
    await waitFor(async () => [undefined, 'Z'].includes(await processState(stopped.pid)), {
      what: `the stopped announcer ${stopped.pid} to be killed`,
    });

    assertCniOk('the ADD after the replacement', await announcerAdd(s, second, { count: 1 }));
    const successor = await theDaemonOf(files.stateDir);
    expect(successor).not.toBe(stopped.pid);
    expect(await processState(bystander.pid!)).toMatch(/^[RS]$/);
    for (const att of [first, second]) expect(await announcerDel(att)).toMatchObject({ code: 0 });
    await terminateDaemon(files.stateDir);
  }, 90_000);
});
