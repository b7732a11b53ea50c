// An upgrade in the middle of a burst (issue 18, "Upgrades"): the DaemonSet
// renames a new build over the installed plugin while the announcer of the
// old build runs bursts. The next CNI call, from the new build, makes the old
// announcer hand over (it stops serving, writes each burst's next round to
// `announcer-handover`, exits) and starts the new build, which goes on from
// there. Every pod gets exactly its planned GARPs, counted per pod IP on the
// bridge over the whole test: nothing lost, nothing sent twice.
import { copyFile, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOUNCER,
  announcerDel,
  announcerFiles,
  garpsFor,
  killStrays,
  ms,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  waitFor,
  waitLogged,
  writeNodeSettings,
  type AnnouncerOutput,
} from './harness';
import { announcerStatus, waitDaemonExit } from './harness/daemon';
import { tracedAdd, tracedPodsOnBridge } from './harness/executor-steps';
import { buildAnnouncerAs, buildOf, runningBuild, terminateDaemon, theDaemonOf } from './harness/held-announcer';

/** Every netns and link this file creates starts with this. */
const PREFIX = `up${RUN_TAG}`;
/**
 * Each pod's burst: rounds of the pods before the swap fall due every ~80 ms, so some fall due while the announcers
 * change places.
 */
const BURST = { count: 6, intervalMs: 250 };
/** Pods ADDed before the swap, and after it. */
const BEFORE = 3;
const AFTER = 1;

let dir: string;
/** The build of bin/announcer, and the other one built from the same sources. */
let oldBuild: string;
const NEXT_BUILD = `next${RUN_TAG}`;

describe.skipIf(skipIntegration())('upgrade: the plugin replaced mid-burst', () => {
  const scope = scopePerTest(PREFIX);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'announcer-upgrade-'));
    await buildAnnouncerAs(join(dir, 'announcer-next'), NEXT_BUILD);
    oldBuild = await buildOf(ANNOUNCER);
    expect(await buildOf(join(dir, 'announcer-next'))).toBe(NEXT_BUILD);
  }, 180_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const burstsByOldTitle =
    `${BEFORE} bursts by the old build, the new build renamed over it, ${AFTER} more ADD: the old ` +
    `announcer hands over and exits, the new one finishes every burst; ${BURST.count} GARPs per pod`;
  it(burstsByOldTitle, async () => {
    const s = scope();
    killStrays(s, { strict: true });
    // The installed plugin: a copy of bin/announcer, where the DaemonSet puts it.
    const binDir = join(dir, `bin-${Math.random().toString(16).slice(2, 8)}`);
    await mkdir(binDir);
    s.defer(() => rm(binDir, { recursive: true, force: true }), `installed plugin dir ${binDir}`);
    const installed = join(binDir, 'announcer');
    await copyFile(ANNOUNCER, installed);
    const next = join(binDir, 'announcer.new');
    await copyFile(join(dir, 'announcer-next'), next);

    const files = await announcerFiles(s);
    // The announcers' own lines (hand-over, start) go to the node's log: the same file as the network's here.
    writeNodeSettings(files.stateDir, { idleExitMs: 1000, logFile: files.logFile, logLevel: 'debug' });
    // Each ADD's CNI process runs under strace: its setns(2) or flock(2) would say it ran the command itself.
    const specs = Array.from({ length: BEFORE + AFTER }, (_, i) => ({ name: `pod${i}`, binary: installed }));
    const traced = await tracedPodsOnBridge(s, files, { prefix: PREFIX, pods: specs, options: { logLevel: 'debug' } });
    const { capture } = traced;
    const pods = traced.pods.map((p) => p.pod);
    const atts = traced.pods.map((p) => p.att);

    const added: AnnouncerOutput[] = [];
    /** Each ADD's setns(2) and flock(2) calls, read before its DEL writes the same trace file. */
    const inProcess: string[][] = [];
    const add = async (i: number, what: string): Promise<void> => {
      const out = await tracedAdd(s, traced.pods[i]!, BURST, `ADD ${atts[i]!.containerId}${what}`);
      added.push(out.add);
      inProcess.push(out.inProcess);
    };
    for (let i = 0; i < BEFORE; i++) await add(i, '');
    const old = await theDaemonOf(files.stateDir);
    expect(await runningBuild(old)).toBe(oldBuild);
    expect((await announcerStatus(files.stateDir)).counters?.served.ADD).toBe(BEFORE);

    // Mid-burst: the first pod's round 3 is out.
    const round3 = { daemon: old, containerId: pods[0]!.containerId, round: 3, of: BURST.count };
    await waitLogged(files, 'info', 'announced', round3);
    // The DaemonSet's upgrade: rename(2) over the installed file while the bursts run.
    await rename(next, installed);
    for (let i = BEFORE; i < pods.length; i++) await add(i, ' after the upgrade');
    await waitDaemonExit(files.stateDir, old, `the old announcer ${old} to exit`);
    const successor = await theDaemonOf(files.stateDir);
    expect(await runningBuild(successor)).toBe(NEXT_BUILD);
    // The new announcer ran the ADD made after the swap; the old one ran those before it.
    expect((await announcerStatus(files.stateDir)).counters?.served.ADD).toBe(AFTER);

    const planned = pods.length * BURST.count;
    // Should some never come, the counts per pod below say whose.
    await waitFor(async () => (await capture.count()) >= planned, {
      timeoutMs: 15_000,
      what: `${planned} GARPs`,
    }).catch(() => undefined);
    for (const att of atts) expect(await announcerDel(att)).toMatchObject({ code: 0 });
    expect(await theDaemonOf(files.stateDir)).toBe(successor);
    await terminateDaemon(files.stateDir);
    const frames = await capture.stop();

    expect(pods.map((pod) => garpsFor(frames, pod.mac, pod.ip).length)).toEqual(pods.map(() => BURST.count));
    for (const [i, pod] of pods.entries())
      expect(ms(garpsFor(frames, pod.mac, pod.ip)[0]!)).toBeLessThanOrEqual(added[i]!.exitedAt);
    // Each round went out once, by one announcer or the other: round 1 never again after the hand-over.
    for (const pod of pods)
      for (let round = 1; round <= BURST.count; round++) {
        const sent = await files.logged('info', 'announced', { containerId: pod.containerId, round });
        expect(sent, `${pod.containerId} round ${round}`).toHaveLength(1);
      }
    expect(inProcess, "setns or flock in an ADD's CNI process").toEqual(pods.map(() => []));
    const replaced = 'executable replaced: handing over to the new build';
    expect(await files.logged('info', replaced, { newBuild: NEXT_BUILD })).toHaveLength(1);
    expect(await files.logged('info', 'announcer started', { build: NEXT_BUILD, handedOver: BEFORE })).toHaveLength(1);
    expect(await files.stateFiles()).toEqual([]);
  });
});
