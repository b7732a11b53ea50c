// Compatibility across the one-executor change (issue 25, part 4), against the previous release's
// executable built from its commit (harness/previous-release.ts): (i) an old shim talking to the new
// announcer, (ii) the new shim talking to an old announcer, (iii) an upgrade from the previous
// release mid-burst, whose records and hand-over file the new announcer takes up. Frames are
// counted per pod on the bridge with tshark; every CNI process runs under strace: no setns and no
// flock, so neither side ran the command in the CNI process.
import { copyFile, mkdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ANNOUNCER,
  announcerDel,
  announcerFiles,
  announcerGc,
  garpsFor,
  killStrays,
  ms,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  waitFor,
  type AnnouncerFiles,
  type AnnouncerOutput,
  type Scope,
} from './harness';
import { announcerStatus, waitDaemonExit } from './harness/daemon';
import { cleanStart, tracedAdd, tracedPodsOnBridge, type TracedPod } from './harness/executor-steps';
import { buildOf, runningBuild, terminateDaemon, theDaemonOf } from './harness/held-announcer';
import { buildPreviousRelease, hasPreviousRelease } from './harness/previous-release';
import { missingTool, skipUnless } from '../support/skip';

/** Every netns and link this file creates starts with this. */
const PREFIX = `cp${RUN_TAG}`;
const BURST = { count: 3, intervalMs: 500 };
/** Why the previous release cannot be built here: its commit is not in this clone (a shallow one). */
const noPrevious = (await hasPreviousRelease())
  ? undefined
  : 'commit 94bb87a is not in this clone (git fetch --unshallow)';

/** A bridge with a capture, and settled pods on it whose calls `binaries[i]` runs under strace. */
async function podsRunBy(s: Scope, files: AnnouncerFiles, binaries: readonly string[]) {
  const pods = binaries.map((binary, i) => ({ name: `pod${i}`, binary }));
  return tracedPodsOnBridge(s, files, { prefix: PREFIX, pods, options: { logLevel: 'debug', idleExitMs: 30_000 } });
}

/** Each pod's GARPs: how many, and how many before its ADD returned. */
function perPod(frames: Parameters<typeof garpsFor>[0], pods: readonly TracedPod[], adds: readonly AnnouncerOutput[]) {
  return pods.map((p, i) => {
    const garps = garpsFor(frames, p.pod.mac, p.pod.ip);
    return { all: garps.length, beforeAdd: garps.filter((f) => ms(f) <= adds[i]!.exitedAt).length };
  });
}

const NO_STRACE = missingTool(['strace'], 'apt-get install strace');

describe.skipIf(skipIntegration() || skipUnless('previous release', noPrevious) || skipUnless('strace', NO_STRACE))(
  'compatibility with the previous release (94bb87a)',
  () => {
    const scope = scopePerTest(PREFIX);

    /**
     * Two pods, the first ADDed by `first` (it starts the announcer, of its own build), the second by `second`: both
     * succeed, neither CNI process runs the command (strace), one announcer serves both, and each pod gets its burst
     * with round 1 once, before its ADD returned. Resolves with how many ADDs the announcer says it served (none for an
     * old one, whose status has no `served`).
     */
    async function firstStartsSecondAsks(first: string, second: string): Promise<number | undefined> {
      const { s, files } = await cleanStart(scope);
      const { capture, pods } = await podsRunBy(s, files, [first, second]);
      const adds = [await tracedAdd(s, pods[0]!, BURST)];
      const announcer = await theDaemonOf(files.stateDir);
      expect(await runningBuild(announcer)).toBe(await buildOf(first));
      // An old shim falls back in-process unless the announcer acks its request in time.
      adds.push(await tracedAdd(s, pods[1]!, BURST));
      expect(adds.map((a) => a.inProcess)).toEqual([[], []]);
      expect(await theDaemonOf(files.stateDir)).toBe(announcer);
      const served = (await announcerStatus(files.stateDir)).counters?.served?.ADD;
      await waitFor(async () => (await capture.count()) >= 2 * BURST.count, { timeoutMs: 10_000, what: 'both bursts' });
      for (const p of pods) expect(await announcerDel(p.att)).toMatchObject({ code: 0 });
      await terminateDaemon(files.stateDir);
      const frames = await capture.stop();
      const adds1 = adds.map((a) => a.add);
      expect(perPod(frames, pods, adds1)).toEqual(pods.map(() => ({ all: BURST.count, beforeAdd: 1 })));
      expect(await files.stateFiles()).toEqual([]);
      return served;
    }

    const oldShimNewTitle =
      'an old shim, the new announcer: served there (served.ADD counts it, no ' +
      'setns in the old CNI process), round 1 once';
    it(oldShimNewTitle, async () => {
      const old = await buildPreviousRelease(scope());
      expect(await firstStartsSecondAsks(ANNOUNCER, old)).toBe(2);
    }, 120_000);

    const newShimOldTitle =
      'the new shim, an old announcer (started by an old call): its request ' +
      'carries ackBy, the old one takes it; frames once';
    it(newShimOldTitle, async () => {
      const old = await buildPreviousRelease(scope());
      await firstStartsSecondAsks(old, ANNOUNCER);
    }, 120_000);

    const upgradeFromPreviousTitle =
      'upgrade from the previous release mid-burst: the old announcer hands over, the new one ' +
      'takes up its records and hand-over file; each pod exactly its GARPs';
    it(upgradeFromPreviousTitle, async () => {
      const s = scope();
      killStrays(s, { strict: true });
      const old = await buildPreviousRelease(s);
      const burst = { count: 6, intervalMs: 250 };
      // The installed plugin: a copy of the previous release, where the DaemonSet puts it.
      const binDir = join(dirname(old), 'bin');
      await mkdir(binDir);
      s.defer(() => rm(binDir, { recursive: true, force: true }), `installed plugin dir ${binDir}`);
      const installed = join(binDir, 'announcer');
      await copyFile(old, installed);
      const next = join(binDir, 'announcer.new');
      await copyFile(ANNOUNCER, next);
      const files = await announcerFiles(s);
      const { capture, pods } = await podsRunBy(s, files, [installed, installed, installed, installed]);
      const adds = [];
      for (const p of pods.slice(0, 3)) adds.push(await tracedAdd(s, p, burst));
      const oldPid = await theDaemonOf(files.stateDir);
      expect(await runningBuild(oldPid)).toBe(await buildOf(old));
      const round3 = new RegExp(
        `INFO announced daemon=${oldPid} containerId=${pods[0]!.pod.containerId} .*round=3 of=`,
      );
      await waitFor(async () => round3.test(await files.log()), { what: `round 3 of ${pods[0]!.pod.containerId}` });
      await rename(next, installed);
      adds.push(await tracedAdd(s, pods[3]!, burst));
      await waitDaemonExit(files.stateDir, oldPid, `the old announcer ${oldPid} to exit`);
      const successor = await theDaemonOf(files.stateDir);
      expect(await runningBuild(successor)).toBe(await buildOf(ANNOUNCER));
      expect(adds.map((a) => a.inProcess)).toEqual(pods.map(() => []));
      await waitFor(async () => (await capture.count()) >= pods.length * burst.count, {
        timeoutMs: 15_000,
        what: `${pods.length * burst.count} GARPs`,
      }).catch(() => undefined);
      for (const p of pods) expect(await announcerDel(p.att)).toMatchObject({ code: 0 });
      await terminateDaemon(files.stateDir);
      const frames = await capture.stop();
      expect(
        perPod(
          frames,
          pods,
          adds.map((a) => a.add),
        ),
      ).toEqual(pods.map(() => ({ all: burst.count, beforeAdd: 1 })));
      // The stated rule (docs/design.md, stateDir files): the old release's attachment lock files stay, and GC removes
      // each once its attachment has no record.
      const oldLocks = pods.slice(0, 3).map((p) => `${p.pod.containerId}@eth0.lock`);
      expect((await files.stateFiles()).sort()).toEqual(oldLocks.sort());
      const gc = await announcerGc(files.stateDir, pods[0]!.pod.conf.name, { 'cni.dev/valid-attachments': [] });
      expect(gc).toMatchObject({ code: 0 });
      await terminateDaemon(files.stateDir);
      expect(await files.stateFiles()).toEqual([]);
    }, 180_000);
  },
);
