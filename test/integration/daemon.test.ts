// One background announcer per stateDir (`announcer daemon <stateDir>`), on
// real namespaces and the real bridge plugin, frames captured
// by tcpdump and decoded by tshark. Assertions are counts: of frames, of
// processes, of bytes of memory; times appear only as capture timestamps
// compared with wall-clock moments taken in the test (before or after an ADD,
// a DEL, a kill), never as a measured duration.
//
// 40 bridge pods on one bridge are made once for the mass start and the rate
// limit; each test has its own stateDir, so its own announcer.
import { readdir, readFile, readlink, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  allocSubnet,
  announcerAdd,
  announcerCli,
  announcerDel,
  announcerGc,
  announcerStatus,
  daemonStatus,
  assertCniOk,
  attachBridgePod,
  stateFiles,
  createBridge,
  daemonsOf,
  DAEMON_SOCKET,
  garpsFor,
  killDaemon,
  leftoversAfterTeardown,
  memoryKiB,
  ms,
  nasFor,
  ownAnnouncerProcesses,
  ownAnnouncerProcessesNow,
  runOk,
  RUN_TAG,
  Scope,
  scopePerTest,
  skipIntegration,
  startCapture,
  throwCleanupErrors,
  waitDaemonGone,
  waitFor,
  promSamples,
  spawnDaemon,
  inBatches,
  quietStandIn,
  taggedId,
  type AnnouncerAttachment,
  type BridgePod,
  type Frame,
  type Subnet,
  attachmentOf,
  type AttachmentHow,
  busiestSecond,
  tempDir,
} from './harness';
import { cleanStart } from './harness/executor-steps';

/** Every netns and link this file creates starts with this. */
const PREFIX = `d${RUN_TAG}`;
/** The network name of every attachment here (GC acts per network). */
const NETWORK = `daemon-${RUN_TAG}`;
/** How many pods start at once in the mass start and the rate-limit test. */
const PODS = 40;
/** idleExitMs of the configs here: an announcer goes soon after its last work. */
const IDLE_EXIT_MS = 400;
/** The most processes the background work of 40 pods may take (one announcer; two while one hands over). */
const MAX_BACKGROUND_PROCESSES = 2;
/** The default burst: count 3, intervalMs 1000, backoff 1. */
const DEFAULT_SCHEDULE_MS = [0, 1000, 2000];
/** How late a round handed over to the announcer may still go out (src/daemon/rounds.ts LATE_GRACE_MS). */
const LATE_GRACE_MS = 1000;

/** A pod the announcer can be chained on: its netns, the main plugin's result, its MAC and IPv4 address. */
type Pod = Pick<BridgePod, 'netns' | 'result' | 'mac' | 'ip'>;

/** The fleet: one bridge, PODS pods on it. */
let fleet: { net: Subnet; bridge: string; pods: Pod[] };
const fleetScope = new Scope();

/**
 * The announcer on a pod's eth0 in network NETWORK, as container `tag`, with a debug log and this file's idleExitMs.
 */
function tagged(tag: string): AttachmentHow {
  return {
    network: NETWORK,
    containerId: taggedId(PREFIX, tag),
    options: { logLevel: 'debug', idleExitMs: IDLE_EXIT_MS },
  };
}

/** Announcer ADD, which must succeed. */
async function addOk(s: Scope, att: AnnouncerAttachment, options: Record<string, unknown>) {
  return assertCniOk(`announcer ADD ${att.containerId}`, await announcerAdd(s, att, options));
}

/** Announcer DEL, which must succeed; resolves with the wall-clock time right after it returned. */
async function delOk(att: AnnouncerAttachment): Promise<number> {
  return assertCniOk(`announcer DEL ${att.containerId}`, await announcerDel(att)).exitedAt;
}

/** A pod on the fleet's bridge: host 10 + i for fleet pod i, the node (gateway) at host 1. */
async function bridgePod(s: Scope, host: number, id: string): Promise<Pod> {
  return attachBridgePod(s, {
    prefix: PREFIX,
    net: fleet.net,
    bridge: fleet.bridge,
    host,
    containerId: id,
    name: NETWORK,
  });
}

describe.skipIf(skipIntegration())('the background announcer of a stateDir', () => {
  const scope = scopePerTest();

  beforeAll(async () => {
    const net = allocSubnet();
    fleet = { net, bridge: await createBridge(fleetScope, { v4Cidr: net.v4Cidr(1), prefix: PREFIX }), pods: [] };
    const indexes = Array.from({ length: PODS }, (_, i) => i);
    fleet.pods = await inBatches(indexes, 8, (i) => bridgePod(fleetScope, 10 + i, `${PREFIX}-pod${i}`));
  }, 120_000);

  afterAll(async () => {
    try {
      throwCleanupErrors(await fleetScope.close());
      expect(await ownAnnouncerProcesses()).toEqual([]);
    } finally {
      expect(await leftoversAfterTeardown(PREFIX)).toEqual([]);
    }
  }, 120_000);

  const readyFdTitle =
    '`daemon --ready-fd=3`: one line on fd 3 once it listens, then fd 3 closed while it runs on ' +
    '(what a starting shim waits for, whichever kind of pipe its runtime gives)';
  it(readyFdTitle, async () => {
    const { s, files } = await cleanStart(scope);
    const { child } = spawnDaemon(s, files.stateDir, ['--ready-fd=3'], { readyFd: true });
    let said = '';
    const ready = child.stdio[3] as Readable;
    ready.on('data', (d: Buffer) => void (said += d.toString()));
    // The end comes once no process holds the write end: the announcer closed it.
    const ended = await Promise.race([once(ready, 'end').then(() => true), sleep(10_000).then(() => false)]);
    expect([ended, said, child.exitCode]).toEqual([true, 'listening\n', null]); // still running
    expect((await daemonsOf(files.stateDir)).map((p) => p.pid)).toEqual([child.pid]);
  });

  const massStartPodsTitle =
    `mass start: ${PODS} pods ADDed at once with default bursts get every round from one announcer, ` +
    `≤ ${MAX_BACKGROUND_PROCESSES} processes (their PSS is printed; its budget is make bench-mass's)`;
  it(massStartPodsTitle, async () => {
    const { s, files } = await cleanStart(scope);
    const capture = await startCapture(s, { iface: fleet.bridge, filter: 'arp' });
    const atts = fleet.pods.map((pod, i) => attachmentOf(pod, files, tagged(`mass${i}`)));

    const added = await Promise.all(atts.map((att) => addOk(s, att, {})));
    // Every ADD has returned: what runs now is the background work of all 40.
    const background = await ownAnnouncerProcessesNow();
    const memory = await Promise.all(background.map((p) => memoryKiB(p.pid)));
    const pssSum = memory.reduce<number>((sum, m) => sum + (m?.pss ?? 0), 0);
    const mib = (kib = 0): string => (kib / 1024).toFixed(1);
    console.info(
      `mass start of ${PODS} pods: ${background.length} background process(es) once every ADD returned, ` +
        `PSS sum ${mib(pssSum)} MiB (` +
        background
          .map(
            (p, i) =>
              `${p.argv[1]}: PSS ${mib(memory[i]?.pss)} MiB = anon ${mib(memory[i]?.pssAnon)} + ` +
              `file ${mib(memory[i]?.pssFile)}, RSS ${mib(memory[i]?.rss)}`,
          )
          .join('; ') +
        ')',
    );
    expect(background.length).toBeLessThanOrEqual(MAX_BACKGROUND_PROCESSES);
    expect((await daemonsOf(files.stateDir)).length).toBe(1); // concurrent ADDs started exactly one
    // That one ran every ADD: no CNI process ran its command itself.
    expect((await announcerStatus(files.stateDir)).counters?.served.ADD).toBe(PODS);

    // Every pod gets its 3 rounds: round 1 from its ADD, 2 and 3 from the announcer.
    const lastAdd = Math.max(...added.map((a) => a.exitedAt));
    await waitFor(async () => (await capture.count()) >= PODS * 3, { timeoutMs: 15_000, what: `${PODS * 3} GARPs` });
    await sleep(Math.max(0, lastAdd + 3000 - Date.now())); // room for a surplus round, should there be one
    const frames = await capture.stop();
    const perPod = fleet.pods.map((pod) => garpsFor(frames, pod.mac, pod.ip));
    expect(perPod.map((g) => g.length)).toEqual(fleet.pods.map(() => 3));
    for (const [i, garps] of perPod.entries()) {
      expect(ms(garps[0]!)).toBeLessThanOrEqual(added[i]!.exitedAt); // round 1 before its ADD returned
      for (const f of garps) expect(f.malformed).toBe(false);
    }

    // Nothing is left running after the DELs and idleExitMs, and nothing is left in stateDir.
    await Promise.all(atts.map((att) => delOk(att)));
    await waitDaemonGone(files.stateDir);
    expect(await ownAnnouncerProcesses()).toEqual([]);
    expect(await stateFiles(files.stateDir)).toEqual([]);
  }, 90_000);

  it('cancel by DEL, by GC and by netns removal: no frame for that pod after it; the others go on', async () => {
    const { s, files } = await cleanStart(scope);
    const gone = await bridgePod(s, 200, taggedId(PREFIX, 'gone'));
    const [byDel, byGc, kept] = [
      attachmentOf(fleet.pods[0]!, files, tagged('cancel0')),
      attachmentOf(fleet.pods[1]!, files, tagged('cancel1')),
      attachmentOf(fleet.pods[2]!, files, tagged('cancel2')),
    ];
    const byNetns = attachmentOf(gone, files, tagged('netns'));
    const pods = new Map([byDel, byGc, kept, byNetns].map((a, i) => [a, i < 3 ? fleet.pods[i]! : gone]));
    const capture = await startCapture(s, { iface: fleet.bridge, filter: 'arp' });
    for (const att of pods.keys()) await addOk(s, att, { count: 10, intervalMs: 300 });
    const daemon = (await daemonsOf(files.stateDir)).map((p) => p.pid);
    expect(daemon).toHaveLength(1);
    await waitFor(async () => (await capture.count()) >= 8, { timeoutMs: 5000, what: 'round 2 of every pod' });

    const delAt = await delOk(byDel);
    const valid = [kept, byNetns].map((a) => ({ containerID: a.containerId, ifname: 'eth0' }));
    const gc = assertCniOk(
      'announcer GC',
      await announcerGc(files.stateDir, NETWORK, { 'cni.dev/valid-attachments': valid }),
    );
    expect(gc.stdout.trim()).toBe('');
    const gcAt = gc.exitedAt;
    await runOk('ip', ['netns', 'del', gone.netns.name]);
    const netnsAt = Date.now();
    await sleep(1000);
    expect((await daemonsOf(files.stateDir)).map((p) => p.pid)).toEqual(daemon); // one announcer throughout
    // DEL and GC removed their records; the record of the pod whose netns went stays until the runtime's DEL.
    const recordOf = (a: AnnouncerAttachment): string => `${a.containerId}@eth0.json`;
    expect(await stateFiles(files.stateDir)).toEqual([kept, byNetns].map(recordOf).sort());
    const keptUntil = await delOk(kept);
    await delOk(byNetns); // the runtime's DEL after the pod is gone removes its record
    await waitDaemonGone(files.stateDir);
    const frames = await capture.stop();

    const sent = (att: typeof byDel): Frame[] => garpsFor(frames, pods.get(att)!.mac, pods.get(att)!.ip);
    for (const [att, at] of [
      [byDel, delAt],
      [byGc, gcAt],
      [byNetns, netnsAt],
    ] as const) {
      expect(sent(att).filter((f) => ms(f) <= at).length).toBeGreaterThanOrEqual(2);
      expect({ pod: att.containerId, after: sent(att).filter((f) => ms(f) > at).length }).toEqual({
        pod: att.containerId,
        after: 0,
      });
    }
    // The pod nobody cancelled kept its rounds after the three others ended.
    expect(sent(kept).filter((f) => ms(f) > netnsAt && ms(f) <= keptUntil).length).toBeGreaterThanOrEqual(2);
    expect(sent(kept).filter((f) => ms(f) > keptUntil)).toEqual([]);
    expect(await stateFiles(files.stateDir)).toEqual([]);
    const ended = async (a: AnnouncerAttachment) =>
      (await files.logged('info', 'background work ended', { containerId: a.containerId })).map((r) => r.fields.why);
    expect(await ended(byDel)).toEqual(['cancelled']);
    expect(await ended(byGc)).toEqual(['cancelled']);
    // Whichever look found the pod gone first: the stat before a round, entering its netns, or its interface.
    const goneWhy = /^(pod gone or work ended|cannot enter pod netns: .*|pod interface eth0 gone)$/;
    expect(await ended(byNetns)).toEqual([expect.stringMatching(goneWhy)]);
    expect(await files.logged('error', /./)).toEqual([]);
  });

  const announcerSIGKILLedMidTitle =
    'the announcer SIGKILLed mid-burst: the next ADD starts another, which sends the ' +
    'rounds still to come and skips those whose time passed';
  it(announcerSIGKILLedMidTitle, async () => {
    const { s, files } = await cleanStart(scope);
    const [a, b] = [fleet.pods[3]!, fleet.pods[4]!];
    const attA = attachmentOf(a, files, tagged('killA'));
    const attB = attachmentOf(b, files, tagged('killB'));
    const capture = await startCapture(s, { iface: fleet.bridge, filter: 'arp' });

    // A: 8 rounds, one a second. The announcer goes after round 2, and stays away for rounds 3 and 4.
    const addA = await addOk(s, attA, { count: 8, intervalMs: 1000 });
    await waitFor(async () => (await capture.count()) >= 2, { timeoutMs: 5000, intervalMs: 10, what: "A's round 2" });
    const first = await daemonsOf(files.stateDir);
    expect(first).toHaveLength(1);
    // `announcer daemon <stateDir>` and the fd of its ready line: no setting on its argv
    expect(first[0]!.argv.slice(1)).toEqual(['daemon', files.stateDir, '--ready-fd=3']);
    // How the shim started it (Bun.spawn in the binary). That it closes its ready fd: the `--ready-fd=3` test.
    expect(await detachment(first[0]!.pid)).toEqual({
      sessionLeader: true,
      cwd: '/',
      // PATH (the harness tags it with its run) and the runtime's GC setting (sys/detached.ts)
      env: [expect.stringMatching(/^PATH=/), 'BUN_JSC_numberOfGCMarkers=1'],
      stdio: ['/dev/null', '/dev/null', '/dev/null'],
    });
    const killed = await killDaemon(files.stateDir);
    const killedAt = Date.now();
    await sleep(Math.max(0, addA.exitedAt + 3300 - Date.now()));

    const bStartedAt = Date.now();
    await addOk(s, attB, { count: 3, intervalMs: 1000 });
    const second = await daemonsOf(files.stateDir);
    expect(second).toHaveLength(1);
    expect(second[0]!.pid).not.toBe(killed);
    await waitDaemonGone(files.stateDir, 10_000);
    const frames = await capture.stop();

    const garpsA = garpsFor(frames, a.mac, a.ip);
    const t1 = ms(garpsA[0]!);
    const due = Array.from({ length: 8 }, (_, k) => t1 + 1000 * k);
    expect(garpsA.filter((f) => ms(f) <= killedAt)).toHaveLength(2);
    expect(garpsA.filter((f) => ms(f) > killedAt && ms(f) < bStartedAt)).toEqual([]);
    // Rounds due before B's ADD are skipped (never sent late); those due after it go out, each once.
    const after = garpsA.filter((f) => ms(f) >= bStartedAt);
    expect(after).toHaveLength(due.filter((d) => d > bStartedAt).length);
    for (const [i, f] of after.entries()) {
      const d = due[due.length - after.length + i]!;
      expect(ms(f)).toBeGreaterThanOrEqual(d - 50);
      expect(ms(f)).toBeLessThanOrEqual(d + LATE_GRACE_MS + 500);
    }
    expect(garpsFor(frames, b.mac, b.ip)).toHaveLength(3);

    await delOk(attA);
    await delOk(attB);
    expect(await stateFiles(files.stateDir)).toEqual([]);
  });

  const deferredRoundGoesTitle =
    'a deferred round 1 goes into the record: the announcer started after the one that sent ' +
    'it goes on with the burst, and never announces the pod again';
  it(deferredRoundGoesTitle, async () => {
    const { s, files } = await cleanStart(scope);
    const net = allocSubnet();
    const down = await quietStandIn(s, { prefix: PREFIX, net, up: false });
    const other = await quietStandIn(s, { prefix: PREFIX, net, host: 6 });
    const att = attachmentOf(down, files, tagged('deferred'));
    const capture = await startCapture(s, { netns: down.netns.name, iface: down.peer, filter: 'arp' });

    // Not ready during ADD: the announcer waits for the pod, then sends round 1 and writes when.
    await addOk(s, att, { count: 3, intervalMs: 1000, addWaitMs: 100, readyTimeoutMs: 30_000 });
    expect(await capture.count()).toBe(0);
    await runOk('ip', ['-n', down.netns.name, 'link', 'set', down.ifname, 'up']);
    await waitFor(async () => (await capture.count()) >= 1, {
      timeoutMs: 5000,
      intervalMs: 10,
      what: 'the deferred round 1',
    });
    const record = join(files.stateDir, `${att.containerId}@eth0.json`);
    await waitFor(async () => typeof JSON.parse(await readFile(record, 'utf8')).job?.firstRoundAt === 'number', {
      what: 'firstRoundAt in the record',
    });

    await killDaemon(files.stateDir);
    // Another ADD with background work starts another announcer, which reads the records.
    await addOk(s, attachmentOf(other, files, tagged('restart')), { count: 2, intervalMs: 200 });
    await waitDaemonGone(files.stateDir, 10_000);
    const garps = garpsFor(await capture.stop(), down.mac, net.v4(5));
    expect(garps.length).toBeGreaterThanOrEqual(1);
    expect(garps.length).toBeLessThanOrEqual(3);
    // Every later frame is round 2 or 3 of the one burst, each at most once and never early: no second round 1.
    const t1 = ms(garps[0]!);
    const rounds = garps.slice(1).map((f) => {
      const offset = ms(f) - t1;
      const k = Math.floor((offset + 50) / 1000);
      return { round: k + 1, lateMs: offset - 1000 * k };
    });
    for (const r of rounds)
      expect(r).toEqual({
        round: expect.toSatisfy((n: number) => n === 2 || n === 3),
        lateMs: expect.toSatisfy((l: number) => l >= -50 && l < 950),
      });
    expect(new Set(rounds.map((r) => r.round)).size).toBe(rounds.length);
    await delOk(att);
  });

  const rateLimitSBurstTitle =
    `rateLimit {20/s, burst 5}, ${PODS} pods at once: ≤ 25 frames in any second, round 1 before ADD ` +
    `returns, later rounds in order`;
  it(rateLimitSBurstTitle, async () => {
    const { s, files } = await cleanStart(scope);
    const limit = { framesPerSecond: 20, burst: 5 };
    const capture = await startCapture(s, { iface: fleet.bridge, filter: 'arp' });
    const atts = fleet.pods.map((pod, i) => attachmentOf(pod, files, tagged(`rate${i}`)));

    // idleExitMs 2000: the announcer must still answer status once the last round is out.
    const added = await Promise.all(atts.map((att) => addOk(s, att, { rateLimit: limit, idleExitMs: 2000 })));
    const status = await daemonStatus(files.stateDir, (st) => st.attachments.length === 0, {
      timeoutMs: 20_000,
      intervalMs: 100,
      what: 'every later round sent or dropped',
    });
    const frames = await capture.stop();
    const counters = status.counters!;

    const perPod = fleet.pods.map((pod) => garpsFor(frames, pod.mac, pod.ip));
    const ours = perPod.flat();
    const busiest = busiestSecond(ours);
    const later = ours.length - PODS;
    console.info(
      `rate limit ${limit.framesPerSecond}/s burst ${limit.burst}, ${PODS} pods: ${ours.length} GARPs, ` +
        `busiest second ${busiest} frames; ` +
        `later rounds sent ${later}, rate-limited delayed ${counters.rateLimited.delayed}, ` +
        `dropped ${counters.rateLimited.dropped}, skipped late ${counters.rounds.skippedLate}`,
    );
    expect(busiest).toBeLessThanOrEqual(limit.framesPerSecond + limit.burst);
    for (const [i, garps] of perPod.entries()) {
      // Round 1 is never dropped and is on the wire before its ADD returned.
      expect(garps.length).toBeGreaterThanOrEqual(1);
      expect(ms(garps[0]!)).toBeLessThanOrEqual(added[i]!.exitedAt);
      // The later rounds: at most 2, none before it was due (the j-th frame is round j or a later one).
      expect(garps.length).toBeLessThanOrEqual(3);
      for (let j = 1; j < garps.length; j++)
        expect(ms(garps[j]!)).toBeGreaterThanOrEqual(ms(garps[0]!) + DEFAULT_SCHEDULE_MS[j]! - 50);
      for (const f of garps) expect(f.malformed).toBe(false);
    }
    // The counters account for every frame and every later round: sent, dropped, or skipped.
    expect(counters.frames.garpRequest).toBe(ours.length);
    expect(counters.rounds.sent).toBe(ours.length);
    expect(later + counters.rateLimited.dropped + counters.rounds.skippedLate).toBe(PODS * 2);
    expect(counters.rateLimited.delayed + counters.rateLimited.dropped).toBeGreaterThan(0); // the limit was hit

    await Promise.all(atts.map((att) => delOk(att)));
    await waitDaemonGone(files.stateDir);
    expect(await stateFiles(files.stateDir)).toEqual([]);
  }, 90_000);

  const announcerStatusHumanTitle =
    '`announcer status`, human and --json: nothing, a running announcer, then only the records once it is killed';
  it(announcerStatusHumanTitle, async () => {
    const { s, files } = await cleanStart(scope);
    const pod = fleet.pods[5]!;
    const att = attachmentOf(pod, files, tagged('status'));

    // Nothing at all: exit 0 and a clear line.
    const empty = await announcerCli(['status', '--state-dir', files.stateDir]);
    expect({ code: empty.code, stderr: empty.stderr }).toEqual({ code: 0, stderr: '' });
    expect(empty.stdout).toBe(
      `background announcer: not running; from the records in ${files.stateDir} (no counters)\nno active attachments\n`,
    );
    expect(await announcerStatus(files.stateDir)).toEqual({
      source: 'records',
      stateDir: files.stateDir,
      attachments: [],
    });

    const capture = await startCapture(s, { iface: fleet.bridge, filter: `arp and ether src ${pod.mac}` });
    await addOk(s, att, { count: 10, intervalMs: 300 });
    const [daemon] = await daemonsOf(files.stateDir);
    await waitFor(async () => (await capture.count()) >= 2, { timeoutMs: 5000, what: 'round 2' });
    expect((await stat(join(files.stateDir, DAEMON_SOCKET))).mode & 0o777).toBe(0o600);
    const json = await announcerStatus(files.stateDir);
    expect(json).toMatchObject({ source: 'daemon', stateDir: files.stateDir, pid: daemon!.pid });
    expect(json.attachments).toHaveLength(1);
    expect(json.attachments[0]).toMatchObject({
      network: NETWORK,
      containerId: att.containerId,
      ifname: 'eth0',
      netns: pod.netns.path,
      roundsPlanned: 10,
      deferred: false,
    });
    expect(json.attachments[0]!.roundsSent).toBeGreaterThanOrEqual(2);
    expect(json.attachments[0]!.nextRoundInMs).toBeGreaterThanOrEqual(0);
    expect(json.attachments[0]!.nextRoundInMs).toBeLessThanOrEqual(300);
    expect(json.counters!.frames.garpRequest).toBeGreaterThanOrEqual(2);
    expect(json.counters!.rounds.sent).toBeGreaterThanOrEqual(2);

    const human = await announcerCli(['status', '--state-dir', files.stateDir]);
    expect({ code: human.code, stderr: human.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = human.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`background announcer: running, pid ${daemon!.pid}, stateDir ${files.stateDir}`);
    expect(lines[1]).toMatch(
      new RegExp(
        `^${NETWORK} ${att.containerId} eth0 netns=${pod.netns.path} rounds=([2-9]|10)/10 (next round in ` +
          `\\d+ ms|no round planned)$`,
      ),
    );
    expect(lines.slice(2).map((l) => l.split(':')[0])).toEqual([
      'frames sent',
      'rounds',
      'deferred waits',
      'rate-limited rounds',
      'address conflicts',
      'gateway checks',
      'errors',
    ]);
    expect(lines[2]).toMatch(/^frames sent: garp-request=\d+ garp-reply=0 na=0$/);

    // Killed: status reads the records (no counters); the DEL then starts the next announcer, which cleans up.
    const killed = await killDaemon(files.stateDir);
    const fromRecords = await announcerStatus(files.stateDir);
    expect(fromRecords).toMatchObject({ source: 'records', stateDir: files.stateDir });
    expect(fromRecords.counters).toBeUndefined();
    expect(fromRecords.attachments.map((a) => [a.containerId, a.roundsPlanned, a.deferred])).toEqual([
      [att.containerId, 10, false],
    ]);
    const humanRecords = await announcerCli(['status', '--state-dir', files.stateDir]);
    expect(humanRecords.stdout.split('\n')[0]).toBe(
      `background announcer: not running; from the records in ${files.stateDir} (no counters)`,
    );

    await delOk(att);
    const [next] = await daemonsOf(files.stateDir);
    expect(next!.pid).not.toBe(killed);
    const after = await announcerCli(['status', '--state-dir', files.stateDir]);
    expect(after.stdout.split('\n').slice(0, 2)).toEqual([
      `background announcer: running, pid ${next!.pid}, stateDir ${files.stateDir}`,
      'no active attachments',
    ]);
    // The next announcer replaced the killed one's socket; no record is left.
    expect((await stateFiles(files.stateDir)).filter((f) => f !== DAEMON_SOCKET)).toEqual([]);
    await capture.stop();
  });

  const announcerAnnounceRoundsTitle =
    '`announcer announce`: 2 rounds 200 ms apart on the wire; refuses the host netns, a ' +
    'non-netns path and a pod that is not ready, in one line on stderr';
  it(announcerAnnounceRoundsTitle, async () => {
    const { s } = await cleanStart(scope);
    const net = allocSubnet();
    const pod = await quietStandIn(s, { prefix: PREFIX, net, v6: true });
    const capture = await startCapture(s, { netns: pod.netns.name, iface: pod.peer, filter: 'arp or icmp6' });
    const startedAt = Date.now();
    const res = await announcerCli([
      'announce',
      '--netns',
      pod.netns.path,
      ...'--ifname eth0 --count 2 --interval 200'.split(' '),
    ]);
    const frames = await capture.stop();
    expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: '' });
    expect(res.stdout).toBe(
      'round 1/2: sent 2 frames on eth0 (garp-request=1 na=1)\nround 2/2: sent 2 frames on eth0 ' +
        '(garp-request=1 na=1)\n',
    );
    const garps = garpsFor(frames, pod.mac, net.v4(5));
    const nas = nasFor(frames, pod.mac, net.v6(5));
    expect(garps).toHaveLength(2);
    expect(nas).toHaveLength(2);
    for (const f of [...garps, ...nas]) expect(f.malformed).toBe(false);
    expect(ms(garps[0]!)).toBeGreaterThanOrEqual(startedAt);
    expect(ms(garps[1]!) - ms(garps[0]!)).toBeGreaterThanOrEqual(150);
    // A manual announcement starts no background process.
    expect(await ownAnnouncerProcessesNow()).toEqual([]);

    const dir = await tempDir(s, 'announcer-announce-');
    const plainFile = join(dir, 'not-a-netns');
    await writeFile(plainFile, '');
    const down = await quietStandIn(s, { prefix: PREFIX, net, host: 6, up: false });
    for (const [netns, ifname, why] of [
      ['/proc/self/ns/net', 'eth0', /own network namespace: refusing to announce from the host/],
      [plainFile, 'eth0', /is not a network namespace/],
      [join(dir, 'missing'), 'eth0', /does not exist/],
      [down.netns.path, 'eth0', /not ready after 300 ms/],
    ] as const) {
      const refused = await announcerCli(['announce', '--netns', netns, '--ifname', ifname, '--wait', '300']);
      expect([refused.code === 0, refused.stdout], netns).toEqual([false, '']);
      // One line on stderr, naming the command and why.
      expect(refused.stderr, netns).toMatch(/^announcer announce: [^\n]*\n$/);
      expect(refused.stderr).toMatch(why);
    }
  });

  const metricsFilePrometheusTextTitle =
    'metricsFile: Prometheus text, written atomically (0644, no temp file ' +
    'left), its counters match the frames on the wire';
  it(metricsFilePrometheusTextTitle, async () => {
    const { s, files } = await cleanStart(scope);
    const net = allocSubnet();
    const pod = await quietStandIn(s, { prefix: PREFIX, net, v6: true });
    const down = await quietStandIn(s, { prefix: PREFIX, net, host: 6, up: false });
    const metricsDir = await tempDir(s, 'announcer-metrics-');
    const metricsFile = join(metricsDir, 'cni_announcer.prom');
    const ready = attachmentOf(pod, files, tagged('metrics'));
    const late = attachmentOf(down, files, tagged('never'));
    const capture = await startCapture(s, { netns: pod.netns.name, iface: pod.peer, filter: 'arp or icmp6' });

    await addOk(s, ready, { count: 3, intervalMs: 200, metricsFile });
    // Not ready within addWaitMs, and never within readyTimeoutMs: a deferred wait that times out.
    await addOk(s, late, { addWaitMs: 100, readyTimeoutMs: 700, metricsFile });
    await waitDaemonGone(files.stateDir); // the last metrics are written as it exits
    const frames = await capture.stop();
    const garps = garpsFor(frames, pod.mac, net.v4(5));
    const nas = nasFor(frames, pod.mac, net.v6(5));
    expect(garps).toHaveLength(3);
    expect(nas).toHaveLength(3);

    expect((await stat(metricsFile)).mode & 0o777).toBe(0o644);
    expect(await readdir(metricsDir)).toEqual(['cni_announcer.prom']);
    const samples = promSamples(await readFile(metricsFile, 'utf8'));
    expect(samples.get('cni_announcer_frames_sent_total{kind="garp_request"}')).toBe(garps.length);
    expect(samples.get('cni_announcer_frames_sent_total{kind="garp_reply"}')).toBe(0);
    expect(samples.get('cni_announcer_frames_sent_total{kind="na"}')).toBe(nas.length);
    expect(samples.get('cni_announcer_rounds_total{outcome="sent"}')).toBe(3);
    expect(samples.get('cni_announcer_deferred_waits_total{outcome="started"}')).toBe(1);
    expect(samples.get('cni_announcer_deferred_waits_total{outcome="timed_out"}')).toBe(1);
    expect(samples.get('cni_announcer_deferred_waits_total{outcome="ready"}')).toBe(0);
    expect(samples.get('cni_announcer_rate_limited_rounds_total{outcome="dropped"}')).toBe(0);
    expect(samples.get('cni_announcer_errors_total')).toBe(0);

    await delOk(ready);
    await delOk(late);
    expect(await stateFiles(files.stateDir)).toEqual([]);
  });
});

/**
 * How the shim started the announcer `pid` (src/sys/spawn-child.bun.ts in the binary): whether it leads its own
 * session, its working directory, its environment and where its stdio goes.
 */
async function detachment(
  pid: number,
): Promise<{ sessionLeader: boolean; cwd: string; env: string[]; stdio: string[] }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // After the command's name: state, ppid, pgrp, session.
  const session = Number(/\) \S+ \d+ \d+ (\d+)/.exec(stat)?.[1]);
  return {
    sessionLeader: session === pid,
    cwd: await readlink(`/proc/${pid}/cwd`),
    env: (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0').filter(Boolean),
    stdio: await Promise.all([0, 1, 2].map((fd) => readlink(`/proc/${pid}/fd/${fd}`))),
  };
}
