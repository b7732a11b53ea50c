// Bursts that never slow ADD, and the lifecycle of the later rounds in the
// background announcer of the stateDir (`announcer daemon
// <stateDir>`, started by the first ADD that needs it, gone idleExitMs after
// its last work). Captures are decoded by tshark; every timing check is on
// capture timestamps (wall clock) against wall-clock moments taken in the
// test, never a duration. Stand-in pods capture on the veth peer inside the
// pod netns; bridge pods (the real bridge plugin) capture on the bridge.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  OLD_MAC,
  allocSubnet,
  announcementsFrom,
  announcerAdd,
  announcerDel,
  announcerGc,
  announcerStatus,
  daemonStatus,
  assertCniOk,
  stateFiles,
  createBridgePod,
  createHostVeth,
  daemonsOf,
  garpsFor,
  leftoversAfterTeardown,
  linkShow,
  makeAnnouncerFiles,
  ms,
  nasFor,
  neighEntry,
  ownAnnouncerProcesses,
  plantStale,
  runOk,
  RUN_TAG,
  type AnnouncerAttachment,
  type AnnouncerFiles,
  type Frame,
  type Scope,
  scopePerTest,
  setSysctl,
  skipIntegration,
  startCapture,
  waitDaemonGone,
  waitFor,
  quietStandIn,
  taggedId,
} from './harness';
import { cleanStart } from './harness/executor-steps';

/** Every netns and link this file creates starts with this. */
const PREFIX = `b${RUN_TAG}`;
/** The network name of every attachment here (GC acts per network). */
const NETWORK = `burst-${RUN_TAG}`;
/** idleExitMs of every config here: the background announcer goes away soon after its last work. */
const IDLE_EXIT_MS = 300;

/**
 * How much earlier than its offset from round 1 a later round may show in a
 * capture: round 1's frames reach the capture a few µs after they are sent,
 * and the offsets count from right after they were sent. A round sent early
 * by more than this fails; nothing here bounds how late a round may be.
 */
const CAPTURE_SLACK_MS = 2;

let root: string;
/** Every stateDir handed out, checked empty after the whole file. */
const stateDirs: string[] = [];

/**
 * A fresh stateDir (not created: the plugin creates it) and log file for one test, under root (removed after the whole
 * file).
 */
async function tempState(): Promise<AnnouncerFiles> {
  const files = await makeAnnouncerFiles(join(root, 't-'));
  stateDirs.push(files.stateDir);
  return files;
}

/** Pids of the background announcers of stateDir that this file started. */
async function daemonPids(stateDir: string): Promise<number[]> {
  return (await daemonsOf(stateDir)).map((p) => p.pid);
}

/**
 * The announcer on a pod's eth0 in network NETWORK, with its own fresh files, a debug log and this file's idleExitMs.
 */
async function freshAttachment(
  id: string,
  netns: string,
  prevResult: unknown,
  cniVersion = '1.0.0',
): Promise<AnnouncerAttachment & { files: AnnouncerFiles }> {
  const files = await tempState();
  return {
    mainConf: { name: NETWORK, cniVersion },
    prevResult,
    containerId: id,
    netns,
    files,
    options: { logLevel: 'debug', idleExitMs: IDLE_EXIT_MS },
  };
}

/** Announcer DEL, which must succeed and leave stateDir empty; resolves with the time right after it returned. */
async function delOk(att: AnnouncerAttachment & { files: AnnouncerFiles }): Promise<number> {
  const { exitedAt } = assertCniOk('announcer DEL', await announcerDel(att));
  expect(await stateFiles(att.files.stateDir)).toEqual([]);
  return exitedAt;
}

/** Gaps between consecutive frames, in ms. */
function gapsMs(frames: readonly Frame[]): number[] {
  return frames.slice(1).map((f, i) => ms(f) - ms(frames[i]!));
}

/** Each frame's time after the first one, in ms. */
function offsetsMs(frames: readonly Frame[]): number[] {
  return frames.map((f) => ms(f) - ms(frames[0]!));
}

/** An IPv4 stand-in pod that makes no noise of its own, its attachment, and a capture on its peer. */
async function quietAttachment(s: Scope, name: string, cniVersion: string) {
  const net = allocSubnet();
  const pod = await quietStandIn(s, { prefix: PREFIX, net });
  const att = await freshAttachment(taggedId(PREFIX, name), pod.netns.path, pod.result, cniVersion);
  const capture = await startCapture(s, { netns: pod.netns.name, iface: pod.peer });
  return { net, pod, att, capture };
}

/**
 * quietAttachment, then its ADD with 10 rounds 300 ms apart, which must
 * succeed and leave one background announcer (its pids in `daemon`).
 */
async function tenRounds(s: Scope, name: string, cniVersion: string) {
  const quiet = await quietAttachment(s, name, cniVersion);
  const out = assertCniOk('announcer ADD', await announcerAdd(s, quiet.att, { count: 10, intervalMs: 300 }));
  const daemon = await daemonPids(quiet.att.files.stateDir);
  expect(daemon).toHaveLength(1);
  return { ...quiet, out, daemon };
}

describe.skipIf(skipIntegration())('bursts, the background announcer and its lifecycle', () => {
  const scope = scopePerTest();

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'announcer-burst-'));
  });

  afterAll(async () => {
    try {
      // Nothing outlives its attachment: no process of ours (the announcers exited once idle),
      // no record, lock or socket in any stateDir (only the announcer's own lock files).
      expect(await ownAnnouncerProcesses()).toEqual([]);
      for (const dir of stateDirs) expect({ dir, files: await stateFiles(dir) }).toEqual({ dir, files: [] });
      expect(await leftoversAfterTeardown(PREFIX)).toEqual([]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  const countIntervalMsOnTitle =
    'count 4, intervalMs 400 on a dual-stack stand-in: 4 GARPs and 4 NAs, 400 ms ' +
    'apart, ADD exits before the last, the announcer after';
  it(countIntervalMsOnTitle, async () => {
    const { s } = await cleanStart(scope);
    const net = allocSubnet();
    const pod = await quietStandIn(s, { prefix: PREFIX, net, v6: true });
    const att = await freshAttachment(taggedId(PREFIX, 'burst'), pod.netns.path, pod.result, '1.1.0');
    const capture = await startCapture(s, { netns: pod.netns.name, iface: pod.peer, filter: 'arp or icmp6' });
    const startedAt = Date.now();

    const out = await announcerAdd(s, att, { count: 4, intervalMs: 400 });
    assertCniOk('announcer ADD', out);
    expect(out.json.ips.map((ip: { address: string }) => ip.address)).toEqual([net.v4Cidr(5), net.v6Cidr(5)]);
    expect(await daemonPids(att.files.stateDir)).toHaveLength(1); // started by this ADD for rounds 2-4

    await waitDaemonGone(att.files.stateDir); // the burst is over and idleExitMs has passed
    const left = startedAt + 2500 - Date.now();
    if (left > 0) await sleep(left);
    const frames = await capture.stop();

    const garps = garpsFor(frames, pod.mac, net.v4(5));
    const nas = nasFor(frames, pod.mac, net.v6(5));
    expect(garps).toHaveLength(4);
    expect(nas).toHaveLength(4);
    expect(announcementsFrom(frames, [pod.mac])).toHaveLength(8);
    for (const f of [...garps, ...nas]) expect(f.malformed).toBe(false);
    for (const sent of [garps, nas]) {
      // Never early: round k goes out no sooner than (k - 1) × 400 ms after round 1. The offsets
      // are the measure, not the gaps: a late round 2 leaves round 3 at its own offset.
      for (const [k, offset] of offsetsMs(sent).entries())
        expect(offset, `round ${k + 1}`).toBeGreaterThanOrEqual(400 * k - CAPTURE_SLACK_MS);
      for (const gap of gapsMs(sent)) expect(gap).toBeLessThanOrEqual(800);
    }
    // Round 1 is on ADD's path; the rest come from the background announcer after ADD exited.
    expect(ms(garps[0]!)).toBeLessThanOrEqual(out.exitedAt);
    expect(ms(nas[0]!)).toBeLessThanOrEqual(out.exitedAt);
    expect(ms(garps[3]!)).toBeGreaterThan(out.exitedAt);
    expect(ms(nas[3]!)).toBeGreaterThan(out.exitedAt);

    await delOk(att);
  });

  it('backoff 2, count 3, intervalMs 200 on a bridge pod: gaps of about 200 then 400 ms', async () => {
    const { s } = await cleanStart(scope);
    const pod = { prefix: PREFIX, ip6: true, containerId: taggedId(PREFIX, 'backoff'), name: NETWORK };
    const { net, bridge, netns, mac, result, containerId: id } = await createBridgePod(s, pod);
    const att = await freshAttachment(id, netns.path, result);
    const capture = await startCapture(s, { iface: bridge, filter: 'arp or icmp6' });

    const out = await announcerAdd(s, att, { count: 3, intervalMs: 200, backoff: 2 });
    assertCniOk('announcer ADD', out);
    await waitDaemonGone(att.files.stateDir);
    const frames = await capture.stop();

    // The schedule is offsets from round 1: 0, 200, 200 + 400, and no round goes out
    // before its offset. Round 2 can come late, when the background announcer this ADD
    // started is not up yet 200 ms after round 1 (see the intervalMs 10 test below);
    // round 3 is due at 600 ms whatever round 2 did.
    for (const sent of [garpsFor(frames, mac, net.v4(5)), nasFor(frames, mac, net.v6(5))]) {
      expect(sent).toHaveLength(3);
      for (const f of sent) expect(f.malformed).toBe(false);
      const [, second, third] = offsetsMs(sent) as [number, number, number];
      expect(second).toBeGreaterThanOrEqual(200 - CAPTURE_SLACK_MS);
      expect(second).toBeLessThanOrEqual(500);
      expect(third).toBeGreaterThanOrEqual(600 - CAPTURE_SLACK_MS);
      expect(third).toBeLessThanOrEqual(900);
    }

    await delOk(att);
  });

  it('intervalMs 10: round 2 comes from the background announcer, never early, once it is up', async () => {
    const { s } = await cleanStart(scope);
    const { net, pod, att, capture } = await quietAttachment(s, 'short', '1.0.0');

    const out = await announcerAdd(s, att, { count: 2, intervalMs: 10 });
    assertCniOk('announcer ADD', out);
    await waitDaemonGone(att.files.stateDir);
    const frames = await capture.stop();
    await delOk(att);

    const garps = garpsFor(frames, pod.mac, net.v4(5));
    expect(garps).toHaveLength(2);
    // Round 2 is due intervalMs after round 1, never sooner, but cannot come before the
    // background announcer that ADD started has booted (~100-400 ms on a busy node); a
    // round handed over by ADD may go out up to 1 s late (src/daemon/rounds.ts, LATE_GRACE_MS).
    const [gap] = gapsMs(garps) as [number];
    expect(gap).toBeGreaterThanOrEqual(10 - CAPTURE_SLACK_MS);
    expect(gap).toBeLessThanOrEqual(2000);
  });

  const gcOtherListTitle =
    'GC with cni.dev/attachments listing another attachment cancels the background rounds: no frame after GC ' +
    'returned, no record, no process once idle';
  it(gcOtherListTitle, async () => {
    const { s } = await cleanStart(scope);
    const { net, pod, att, capture, out } = await tenRounds(s, 'gc', '1.1.0');
    await sleep(out.exitedAt + 700 - Date.now());
    await waitFor(async () => (await capture.count()) >= 2, { timeoutMs: 3000, what: 'round 2 from the background' });

    const lists = { 'cni.dev/attachments': [{ containerID: `${att.containerId}-other`, ifname: 'eth0' }] };
    const gc = assertCniOk('announcer GC', await announcerGc(att.files.stateDir, NETWORK, lists));
    expect(gc.stdout.trim()).toBe('');
    expect(await stateFiles(att.files.stateDir)).toEqual([]);
    await waitDaemonGone(att.files.stateDir);
    await sleep(Math.max(0, gc.exitedAt + 1500 - Date.now()));
    const fromPod = (await capture.stop()).filter((f) => f.eth.src === pod.mac);
    expect(garpsFor(fromPod, pod.mac, net.v4(5)).filter((f) => ms(f) <= gc.exitedAt).length).toBeGreaterThanOrEqual(2);
    expect(fromPod.filter((f) => ms(f) > gc.exitedAt)).toEqual([]);
  });

  it('GC listing the attachment as valid, or of another network, keeps its background rounds going', async () => {
    const { s } = await cleanStart(scope);
    const { net, pod, att, capture, out, daemon } = await tenRounds(s, 'gckeep', '1.1.0');
    await sleep(out.exitedAt + 500 - Date.now());

    assertCniOk(
      'announcer GC (attachment valid)',
      await announcerGc(att.files.stateDir, NETWORK, {
        'cni.dev/valid-attachments': [{ containerID: att.containerId, ifname: 'eth0' }],
      }),
    );
    const otherNetwork = assertCniOk(
      'announcer GC (another network)',
      await announcerGc(att.files.stateDir, `${NETWORK}-other`, { 'cni.dev/valid-attachments': [] }),
    );
    const gcDoneAt = otherNetwork.exitedAt;
    expect(await daemonPids(att.files.stateDir)).toEqual(daemon);
    expect(await stateFiles(att.files.stateDir)).toEqual([`${att.containerId}@eth0.json`]);
    expect((await announcerStatus(att.files.stateDir)).attachments.map((a) => a.containerId)).toEqual([
      att.containerId,
    ]);

    // Frames keep coming after both GCs.
    await sleep(900);
    const delAt = await delOk(att);
    await waitDaemonGone(att.files.stateDir);
    const frames = await capture.stop();

    const after = garpsFor(frames, pod.mac, net.v4(5)).filter((f) => ms(f) > gcDoneAt && ms(f) <= delAt);
    expect(after.length).toBeGreaterThanOrEqual(2);
    expect(frames.filter((f) => f.eth.src === pod.mac && ms(f) > delAt)).toEqual([]);
  });

  const linkDownAtTitle =
    'link down at ADD: ADD returns at once, sends nothing, and the stale entry is repaired after link up';
  it(linkDownAtTitle, async () => {
    const { s } = await cleanStart(scope);
    const pod = { prefix: PREFIX, containerId: taggedId(PREFIX, 'deferred'), name: NETWORK };
    const { bridge, netns: podNs, mac, ip, result, containerId: id } = await createBridgePod(s, pod);
    // A second port with carrier keeps the bridge's carrier up while the pod is down:
    // losing carrier would flush the bridge's neighbour table, planted entry included.
    const keeper = await createHostVeth(s, PREFIX);
    await runOk('ip', ['link', 'set', keeper.name, 'master', bridge]);
    // Only our frames may repair the entry: no kernel GARP/NA on link up.
    await setSysctl('net.ipv4.conf.eth0.arp_notify', 0, podNs.name);
    await setSysctl('net.ipv6.conf.eth0.ndisc_notify', 0, podNs.name);
    await runOk('ip', ['-n', podNs.name, 'link', 'set', 'eth0', 'down']);
    await plantStale(bridge, ip, OLD_MAC);
    expect(await neighEntry(bridge, ip)).toMatchObject({ state: 'STALE', mac: OLD_MAC });
    const att = await freshAttachment(id, podNs.path, result);
    const capture = await startCapture(s, { iface: bridge, filter: `ether src ${mac}` });

    const out = await announcerAdd(s, att, { count: 2, intervalMs: 300, addWaitMs: 200 });
    assertCniOk('announcer ADD', out);
    expect(out.json).toMatchObject({ cniVersion: '1.0.0', interfaces: result.interfaces, ips: result.ips });
    expect(await daemonPids(att.files.stateDir)).toHaveLength(1); // waiting for the link
    const deferred = 'pod not ready yet: announcing from the background once it is';
    expect(await att.files.logged('info', deferred, { containerId: id })).toHaveLength(1);
    expect(await neighEntry(bridge, ip)).toMatchObject({ state: 'STALE', mac: OLD_MAC });
    const waiting = await daemonStatus(att.files.stateDir);
    expect(waiting.attachments).toEqual([
      {
        network: NETWORK,
        containerId: id,
        ifname: 'eth0',
        netns: podNs.path,
        roundsSent: 0,
        roundsPlanned: 2,
        deferred: true,
      },
    ]);

    const upAt = Date.now();
    await runOk('ip', ['-n', podNs.name, 'link', 'set', 'eth0', 'up']);
    await waitFor(async () => (await neighEntry(bridge, ip))?.mac === mac, {
      timeoutMs: 5000,
      what: `${ip} on ${bridge} to hold ${mac}`,
    });
    await waitDaemonGone(att.files.stateDir);
    const frames = await capture.stop();

    expect(frames.filter((f) => ms(f) < upAt)).toEqual([]);
    expect(garpsFor(frames, mac, ip)).toHaveLength(2);
    expect(await att.files.logged('info', 'announced', { round: 1, deferred: true })).toHaveLength(1);

    await delOk(att);
  });

  const readyTimeoutMsBoundsDeferredTitle =
    'readyTimeoutMs bounds a deferred wait: the background announcer gives up ' +
    'on its own, sends nothing, and exits once idle';
  it(readyTimeoutMsBoundsDeferredTitle, async () => {
    const { s } = await cleanStart(scope);
    const net = allocSubnet();
    const pod = await quietStandIn(s, { prefix: PREFIX, net, up: false });
    expect((await linkShow('eth0', pod.netns.name))?.up).toBe(false);
    const att = await freshAttachment(taggedId(PREFIX, 'timeout'), pod.netns.path, pod.result);
    const capture = await startCapture(s, { netns: pod.netns.name, iface: pod.peer });

    const out = await announcerAdd(s, att, { addWaitMs: 100, readyTimeoutMs: 800 });
    assertCniOk('announcer ADD', out);
    // The record holds the deferred job (no round 1 yet), and nothing else ever pointed at a process.
    const record = JSON.parse(await readFile(join(att.files.stateDir, `${att.containerId}@eth0.json`), 'utf8'));
    expect(record.job).toMatchObject({ containerId: att.containerId, ifname: 'eth0', netns: att.netns });
    expect(record.job.firstRoundAt).toBeUndefined();
    expect(record.tail).toBeUndefined();
    expect(await daemonPids(att.files.stateDir)).toHaveLength(1);

    await waitDaemonGone(att.files.stateDir);
    const frames = await capture.stop();
    expect(frames.filter((f) => f.eth.src === pod.mac)).toEqual([]);
    expect(await att.files.logged('warn', 'pod never became ready: not announcing')).toHaveLength(1);

    await delOk(att);
  });
});
