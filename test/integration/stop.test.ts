// Every way the announcer stops, with calls queued on its socket (issue 34): SIGTERM of an announcer a call started,
// SIGTERM of a resident one, the idle exit, a hand-over to a second build, and kubelet's stop (SIGTERM, then SIGKILL
// after the DaemonSet's grace). SIGSTOP holds the announcer while the calls connect and write their requests, so that
// they wait in its socket's backlog when it stops; `ss` shows them there. Each call must be answered or passed on to
// the next announcer, and succeed there within its own deadline; each ADD's round 1 is on the wire once, before it
// returned (tshark); the stop takes at most STOP_MS. A reset (the announcer SIGKILLed with a request unread) is sent
// to the next announcer too.
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { STOP_MS } from '../../src/protocol';
import { ANNOUNCER_SOCKET } from '../../src/state-files';
import {
  ANNOUNCER,
  allocSubnet,
  announcerAdd,
  announcerDel,
  announcerRun,
  attachBridgePod,
  attachmentOf,
  bridgeWithKeeper,
  garpsFor,
  ms,
  RUN_TAG,
  run,
  scopePerTest,
  skipIntegration,
  startCapture,
  waitFor,
  writeNodeSettings,
  type AnnouncerAttachment,
  type AnnouncerFiles,
  type AnnouncerOutput,
  type BridgePod,
  type Scope,
} from './harness';
import { announcerStatus, daemonsOf, spawnDaemon, waitDaemonExit } from './harness/daemon';
import { cleanStart, startingAdd } from './harness/executor-steps';
import {
  buildAnnouncerAs,
  buildOf,
  runningBuild,
  signalDaemon,
  stopDaemon,
  theDaemonOf,
} from './harness/held-announcer';
import type { Frame } from './harness/tshark';
import { recordsOf } from '../support/log-records';

/** Every netns and link this file creates starts with this. */
const PREFIX = `st${RUN_TAG}`;
/** Each queued ADD's burst: round 1, and one more a second later. */
const BURST = { count: 2, intervalMs: 1000 };
/** Slack on each bound: a loaded CI node, process start-up. */
const SLACK_MS = 3000;
/** The DaemonSet's grace between kubelet's SIGTERM and its SIGKILL. */
async function graceSeconds(): Promise<number> {
  const yaml = await readFile(new URL('../../deploy/daemonset.yaml', import.meta.url), 'utf8');
  return parse(yaml).spec.template.spec.terminationGracePeriodSeconds;
}

/** A settled pod on the test's bridge, and its announcer attachment. */
interface Pod {
  pod: BridgePod;
  att: AnnouncerAttachment;
}

/** Connections waiting in the backlog of stateDir's listening socket (a listener's Recv-Q, as `ss` shows it). */
async function backlog(stateDir: string): Promise<number> {
  const { stdout } = await run('ss', ['-xlnH', 'src', join(stateDir, ANNOUNCER_SOCKET)]);
  return Number(stdout.trim().split(/\s+/)[2] ?? 0);
}

/** A bridge with an ARP capture, settled pods on it, and node settings (the announcer's own lines in the log). */
async function podsOnBridge(s: Scope, files: AnnouncerFiles, names: readonly string[], idleExitMs = 30_000) {
  writeNodeSettings(files.stateDir, { idleExitMs, logFile: files.logFile, logLevel: 'debug' });
  const net = allocSubnet();
  const bridge = await bridgeWithKeeper(s, net, { prefix: PREFIX });
  const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
  const pods: Pod[] = [];
  for (const [i, name] of names.entries()) {
    const containerId = `${PREFIX}-${name}`;
    const pod = await attachBridgePod(s, { prefix: PREFIX, net, bridge, host: 10 + i, containerId, settle: true });
    pods.push({ pod, att: attachmentOf(pod, files) });
  }
  return { capture, pods };
}

/**
 * While the announcer `pid` (the stateDir's one) is SIGSTOPped, starts `calls` and waits until each has connected and
 * written its request (the backlog holds them all); SIGCONT at scope close if the test did not send it.
 */
async function queueWhileStopped(
  s: Scope,
  stateDir: string,
  pid: number,
  calls: () => Promise<AnnouncerOutput>[],
): Promise<{ results: Promise<AnnouncerOutput[]>; resume: () => Promise<void> }> {
  const { pid: stopped, resume } = await stopDaemon(s, stateDir);
  if (stopped !== pid) throw new Error(`the announcer of ${stateDir} is ${stopped}, not ${pid}`);
  const started = calls();
  await waitFor(async () => (await backlog(stateDir)) >= started.length, {
    what: `${started.length} calls queued on the stopped announcer`,
  });
  // Each call has written its line by now too: its shim writes right after connect(2) returns.
  await new Promise((r) => setTimeout(r, 300));
  return { results: Promise.all(started), resume };
}

/** The stop's record in the log of the announcer `pid`: its duration and how many requests it passed on. */
async function stopRecord(files: AnnouncerFiles, pid: number) {
  return waitFor(
    async () => recordsOf(await files.log(), 'announcer stopped').find((r) => r.fields.daemon === pid) ?? false,
    { what: `the stop of announcer ${pid} in the log` },
  );
}

/** Each pod's round 1: on the wire once before its ADD returned. */
function expectRoundOneOnce(frames: Frame[], added: [Pod, AnnouncerOutput][]): void {
  for (const [{ pod }, add] of added)
    expect(
      garpsFor(frames, pod.mac, pod.ip).filter((f) => ms(f) <= add.exitedAt),
      pod.containerId,
    ).toHaveLength(1);
}

describe.skipIf(skipIntegration())('the announcer stops with calls queued on its socket', () => {
  const scope = scopePerTest(PREFIX);

  const sigtermTitle =
    'SIGTERM of an announcer a call started: two ADDs, a CHECK and a DEL queued are passed on and succeed on the ' +
    'next announcer; round 1 once each; the stop takes at most STOP_MS';
  it(sigtermTitle, async () => {
    const { s, files } = await cleanStart(scope);
    const { capture, pods } = await podsOnBridge(s, files, ['starter', 'a', 'b', 'gone']);
    const [starter, a, b, gone] = pods as [Pod, Pod, Pod, Pod];
    await startingAdd(s, starter.att);
    await startingAdd(s, gone.att);
    const first = await theDaemonOf(files.stateDir);
    const queued = await queueWhileStopped(s, files.stateDir, first, () => [
      announcerAdd(s, a.att, BURST),
      announcerAdd(s, b.att, BURST),
      announcerRun(starter.att, 'CHECK'),
      announcerDel(gone.att),
    ]);
    await signalDaemon(first, files.stateDir, 'SIGTERM');
    const resumedAt = Date.now();
    await queued.resume();
    const [addA, addB, check, del] = await queued.results;
    for (const out of [addA!, addB!, check!, del!]) expect(out.code, out.stdout + out.stderr).toBe(0);
    expect(del!.stderr).toBe('');
    await waitDaemonExit(files.stateDir, first);
    expect(Date.now() - resumedAt).toBeLessThanOrEqual(STOP_MS + SLACK_MS);
    const stop = await stopRecord(files, first);
    expect(stop.fields).toMatchObject({ passedOn: 4 });
    expect(stop.fields.stopMs as number).toBeLessThanOrEqual(STOP_MS);
    const next = await theDaemonOf(files.stateDir);
    expect((await announcerStatus(files.stateDir)).counters?.served).toMatchObject({ ADD: 2, CHECK: 1, DEL: 1 });
    expect(next).not.toBe(first);
    for (const p of [starter, a, b]) expect(await announcerDel(p.att)).toMatchObject({ code: 0 });
    expectRoundOneOnce(await capture.stop(), [
      [a, addA!],
      [b, addB!],
    ]);
    console.info(`stop path "SIGTERM": ${stop.fields.passedOn} passed on, stopMs ${stop.fields.stopMs}`);
  }, 90_000);

  const idleTitle =
    'idle exit: calls that connect while the announcer decides it is idle are taken in and passed on, never reset';
  it(idleTitle, async () => {
    const { s, files } = await cleanStart(scope);
    const { capture, pods } = await podsOnBridge(s, files, ['starter', 'a'], 1000);
    const [starter, a] = pods as [Pod, Pod];
    await startingAdd(s, starter.att);
    const first = await theDaemonOf(files.stateDir);
    await waitFor(async () => (await announcerStatus(files.stateDir)).attachments.length === 0, {
      what: "the starter's work to end",
    });
    // Hold every poll(2) of the announcer on its way out for 3 s (strace): the one that times out once it is idle
    // returns to a loop that stops, while calls queue. An idle announcer is in one long poll when strace attaches,
    // which the kernel restarts as restart_syscall: that one is held too. Detaching lets it go on at once.
    const held = ['-e', 'trace=poll,restart_syscall', '-e', 'inject=poll,restart_syscall:delay_exit=3000000'];
    const strace = spawn('strace', ['-qq', '-p', String(first), ...held, '-o', '/dev/null']);
    s.defer(() => void strace.kill('SIGKILL'), `strace of ${first}`);
    await new Promise((r) => setTimeout(r, 1500)); // idle, and its last poll has timed out
    const adding = announcerAdd(s, a.att, BURST);
    const checking = announcerRun(starter.att, 'CHECK');
    await waitFor(async () => (await backlog(files.stateDir)) >= 2, { what: 'two calls queued' });
    await new Promise((r) => setTimeout(r, 300));
    strace.kill('SIGINT'); // detaches
    const [add, check] = await Promise.all([adding, checking]);
    expect([add.code, check.code], add.stdout + check.stdout).toEqual([0, 0]);
    await waitDaemonExit(files.stateDir, first);
    const stop = await stopRecord(files, first);
    expect(recordsOf(await files.log(), 'idle: stopping').some((r) => r.fields.daemon === first)).toBe(true);
    expect(stop.fields).toMatchObject({ passedOn: 2 });
    expect(await theDaemonOf(files.stateDir)).not.toBe(first);
    expect(await announcerDel(a.att)).toMatchObject({ code: 0 });
    expectRoundOneOnce(await capture.stop(), [[a, add]]);
    console.info(`stop path "idle exit": ${stop.fields.passedOn} passed on, stopMs ${stop.fields.stopMs}`);
  }, 90_000);

  const residentTitle =
    'SIGTERM of the resident announcer, as kubelet sends it: queued calls are passed on to an announcer a call ' +
    'starts; it exits 0 within STOP_MS, long before the SIGKILL the grace period would bring';
  it(residentTitle, async () => {
    const { s, files } = await cleanStart(scope);
    const { capture, pods } = await podsOnBridge(s, files, ['starter', 'a']);
    const [starter, a] = pods as [Pod, Pod];
    const resident = spawnDaemon(s, files.stateDir, ['--resident', '--log-format=json']);
    const { exited } = resident;
    const logs = () =>
      resident
        .stdout()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l));
    await waitFor(async () => logs().some((l) => l.msg === 'announcer started'), { what: 'the resident to start' });
    await startingAdd(s, starter.att);
    expect(await theDaemonOf(files.stateDir)).toBe(resident.pid);
    const queued = await queueWhileStopped(s, files.stateDir, resident.pid, () => [
      announcerAdd(s, a.att, BURST),
      announcerRun(starter.att, 'CHECK'),
    ]);
    // kubelet: SIGTERM, then SIGKILL once the grace period is over.
    const GRACE_S = await graceSeconds();
    resident.child.kill('SIGTERM');
    const termAt = Date.now();
    await queued.resume();
    const killer = setTimeout(() => resident.child.kill('SIGKILL'), GRACE_S * 1000);
    const code = await exited;
    clearTimeout(killer);
    const stopTook = Date.now() - termAt;
    const [add, check] = await queued.results;
    expect([add!.code, check!.code], add!.stdout + check!.stdout).toEqual([0, 0]);
    expect(code).toBe(0);
    expect(stopTook).toBeLessThan(GRACE_S * 1000);
    const stopped = logs().find((l) => l.msg === 'announcer stopped');
    expect(stopped).toMatchObject({ passedOn: 2 });
    expect(stopped.stopMs).toBeLessThanOrEqual(STOP_MS);
    expect(await theDaemonOf(files.stateDir)).not.toBe(resident.pid);
    expect(await announcerDel(a.att)).toMatchObject({ code: 0 });
    expectRoundOneOnce(await capture.stop(), [[a, add!]]);
    console.info(
      `stop path "resident SIGTERM": ${stopped.passedOn} passed on, stopMs ${stopped.stopMs}, exited ${stopTook} ms ` +
        'after SIGTERM',
    );
  }, 90_000);

  describe('a hand-over to a second build', () => {
    let dir: string;
    const NEXT_BUILD = `stnext${RUN_TAG}`;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'announcer-stop-'));
      await buildAnnouncerAs(join(dir, 'announcer-next'), NEXT_BUILD);
      expect(await buildOf(join(dir, 'announcer-next'))).toBe(NEXT_BUILD);
    }, 180_000);
    afterAll(async () => {
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    const handoverTitle =
      'the new build renamed over the plugin, calls of the new build queued: the old announcer passes them all on ' +
      'and the new build runs them; round 1 once each';
    it(handoverTitle, async () => {
      const { s, files } = await cleanStart(scope);
      const binDir = join(dir, `bin-${Math.random().toString(16).slice(2, 8)}`);
      await mkdir(binDir);
      s.defer(() => rm(binDir, { recursive: true, force: true }), `installed plugin dir ${binDir}`);
      const installed = join(binDir, 'announcer');
      await copyFile(ANNOUNCER, installed);
      const { capture, pods } = await podsOnBridge(s, files, ['starter', 'a', 'b']);
      const [starter, a, b] = pods.map((p) => ({
        ...p,
        att: { ...p.att, command: { argv: [installed] as [string] } },
      }));
      await startingAdd(s, starter!.att);
      const old = await theDaemonOf(files.stateDir);
      await copyFile(join(dir, 'announcer-next'), `${installed}.new`);
      await rename(`${installed}.new`, installed);
      const queued = await queueWhileStopped(s, files.stateDir, old, () => [
        announcerAdd(s, a!.att, BURST),
        announcerAdd(s, b!.att, BURST),
      ]);
      await queued.resume();
      const [addA, addB] = await queued.results;
      for (const out of [addA!, addB!]) expect(out.code, out.stdout + out.stderr).toBe(0);
      await waitDaemonExit(files.stateDir, old);
      const stop = await stopRecord(files, old);
      expect(stop.fields).toMatchObject({ passedOn: 2 });
      expect(stop.fields.stopMs as number).toBeLessThanOrEqual(STOP_MS);
      const next = await theDaemonOf(files.stateDir);
      expect(await runningBuild(next)).toBe(NEXT_BUILD);
      expect((await announcerStatus(files.stateDir)).counters?.served).toMatchObject({ ADD: 2 });
      for (const p of [starter!, a!, b!]) expect(await announcerDel(p.att)).toMatchObject({ code: 0 });
      expectRoundOneOnce(await capture.stop(), [
        [a!, addA!],
        [b!, addB!],
      ]);
      console.info(`stop path "hand-over": ${stop.fields.passedOn} passed on, stopMs ${stop.fields.stopMs}`);
    }, 90_000);
  });

  const resetTitle =
    'SIGKILL with an ADD queued (its request never read: the kernel resets it): the call sends it to the next ' +
    'announcer at once, and succeeds there; round 1 once';
  it(resetTitle, async () => {
    const { s, files } = await cleanStart(scope);
    const { capture, pods } = await podsOnBridge(s, files, ['starter', 'a']);
    const [starter, a] = pods as [Pod, Pod];
    await startingAdd(s, starter.att);
    const first = await theDaemonOf(files.stateDir);
    const queued = await queueWhileStopped(s, files.stateDir, first, () => [announcerAdd(s, a.att, BURST)]);
    const killedAt = Date.now();
    await signalDaemon(first, files.stateDir, 'SIGKILL');
    const [add] = await queued.results;
    expect(add!.code, add!.stdout + add!.stderr).toBe(0);
    const movedOn = add!.exitedAt - killedAt;
    expect(movedOn).toBeLessThanOrEqual(SLACK_MS);
    expect((await daemonsOf(files.stateDir)).map((p) => p.pid)).not.toContain(first);
    expect((await announcerStatus(files.stateDir)).counters?.served).toMatchObject({ ADD: 1 });
    expect(await announcerDel(a.att)).toMatchObject({ code: 0 });
    expectRoundOneOnce(await capture.stop(), [[a, add!]]);
    console.info(`reset: the ADD succeeded on the next announcer ${movedOn} ms after the SIGKILL`);
  }, 90_000);
});
