// Garbage on the background announcer's control socket stops no one's
// service: while two pods' bursts run, a client sends it random bytes, a
// 1 MiB message and invalid requests, then holds 500 connections open
// without a word. An ADD made meanwhile still gets every round; the announcer
// keeps its pid, answers `announcer status`, lets go of the idle connections'
// descriptors, and its memory does not balloon. Oracles: tcpdump and tshark
// for the frames, /proc/PID/fd and /proc/PID/status of the announcer process
// this test started.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import {
  allocSubnet,
  ANNOUNCER,
  announcerAdd,
  announcerDel,
  announcerFiles,
  announcerStatus,
  assertCniOk,
  createBridge,
  createStandInFleet,
  DAEMON_SOCKET,
  daemonsOf,
  garpsFor,
  killStrays,
  leftoversAfterTeardown,
  missingTool,
  ownAnnouncerProcesses,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  skipTestUnless,
  skipUnless,
  startCapture,
  startGarbageClient,
  waitDaemonGone,
  waitFor,
  type AnnouncerAttachment,
  type AnnouncerFiles,
  type FleetPod,
  type GarbageStep,
  type StatusJson,
} from './harness';

/** Every netns and link this file creates starts with this. */
const PREFIX = `g${RUN_TAG}`;
const NETWORK = `garbage-${RUN_TAG}`;
const IDLE_CONNECTIONS = 500;
/** The bursts running while the garbage arrives, and the one ADDed meanwhile. */
const RUNNING = { count: 10, intervalMs: 700 };
const MEANWHILE = { count: 5, intervalMs: 300 };
/** How long the announcer keeps a socket an ADD handed over (src/daemon/control.ts HOLD_HANDED_OVER_MS), and a margin. */
const HANDED_OVER_HELD_MS = 2000 + 300;
/** What sends the garbage, and why it cannot when it cannot. */
const PYTHON = 'python3 (a SOCK_SEQPACKET client)';
const PYTHON_MISSING = missingTool(['python3'], 'scripts/ensure-system-deps.sh installs python3-minimal');
/** RLIMIT_NOFILE of the announcer in the test of a descriptor shortage. */
const FD_LIMIT = 64;
/** "About the baseline": sockets of a round in progress, or a background close in flight. */
const FD_SLACK = 3;

/** The announcer's open descriptors: the entries of /proc/PID/fd. */
async function openFds(pid: number): Promise<number> {
  return (await readdir(`/proc/${pid}/fd`)).length;
}

/** The fewest open descriptors in a few looks 50 ms apart: the count between rounds. */
async function quietFds(pid: number): Promise<number> {
  let fewest = Infinity;
  for (let i = 0; i < 6; i++, await sleep(50)) fewest = Math.min(fewest, await openFds(pid));
  return fewest;
}

/** VmRSS of a process, KiB. */
async function vmRssKiB(pid: number): Promise<number> {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(await readFile(`/proc/${pid}/status`, 'latin1'));
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]);
}

/** The announcer chained on a fleet pod's eth0. */
function attachmentOf(pod: FleetPod, files: AnnouncerFiles, tag: string): AnnouncerAttachment {
  return {
    mainConf: { name: NETWORK, cniVersion: '1.0.0' },
    prevResult: pod.result,
    containerId: `${PREFIX}-${tag}`,
    netns: pod.netns.path,
    files,
    options: { logLevel: 'info', idleExitMs: 3000 },
  };
}

/** Every reply of a garbage step is the announcer's refusal: `{ok: false, error}`. */
function expectRefusals(step: GarbageStep, name: GarbageStep['step'], count: number): void {
  expect(step.step).toBe(name);
  expect(step.replies).toHaveLength(count);
  for (const reply of step.replies!) expect({ name, reply: JSON.parse(reply ?? 'null') }).toEqual({ name, reply: { ok: false, error: expect.any(String) } });
}

describe.skipIf(skipIntegration())('the background announcer and garbage on its control socket', () => {
  const scope = scopePerTest();

  afterAll(async () => {
    expect(await ownAnnouncerProcesses()).toEqual([]);
    expect(await leftoversAfterTeardown(PREFIX)).toEqual([]);
  }, 60_000);

  it.skipIf(skipUnless(PYTHON, PYTHON_MISSING))(
    `random bytes, a 1 MiB message, invalid requests and ${IDLE_CONNECTIONS} idle connections: an ADD meanwhile gets every round, same pid, status answers, fds back to baseline, RSS < 2×`,
    async () => {
      const s = scope();
      killStrays(s, { strict: true });
      const files = await announcerFiles(s);
      const net = allocSubnet();
      const bridge = await createBridge(s, { v4Cidr: net.v4Cidr(1), prefix: PREFIX });
      const pods = await createStandInFleet(s, { prefix: PREFIX, net, bridge, hosts: [10, 11, 12] });
      const [a, b, c] = [0, 1, 2].map((i) => attachmentOf(pods[i]!, files, ['a', 'b', 'c'][i]!)) as [AnnouncerAttachment, AnnouncerAttachment, AnnouncerAttachment];
      const capture = await startCapture(s, { iface: bridge, filter: 'arp' });

      for (const att of [a, b]) assertCniOk(`announcer ADD ${att.containerId}`, await announcerAdd(s, att, RUNNING));
      const [daemon, ...more] = await daemonsOf(files.stateDir);
      expect(more).toEqual([]);
      const pid = daemon!.pid;
      await sleep(HANDED_OVER_HELD_MS); // the ADDs' handed-over sockets are closed by now
      const baselineFds = await quietFds(pid);
      const rssBefore = await vmRssKiB(pid);

      const garbage = startGarbageClient(s, join(files.stateDir, DAEMON_SOCKET), IDLE_CONNECTIONS);
      expectRefusals(await garbage.next(), 'random', 20);
      const huge = await garbage.next();
      expect(huge.bytes).toBeGreaterThan(1 << 20);
      expectRefusals(huge, 'huge', 1);
      expectRefusals(await garbage.next(), 'invalid', 4);
      expect(await garbage.next()).toEqual({ step: 'held', connections: IDLE_CONNECTIONS });
      const heldFds = await openFds(pid);

      // Meanwhile: an ADD, and status.
      assertCniOk(`announcer ADD ${c.containerId}`, await announcerAdd(s, c, MEANWHILE));
      const during = await announcerStatus(files.stateDir);
      expect({ source: during.source, pid: during.pid }).toEqual({ source: 'daemon', pid });

      // A client that says nothing is dropped: the fds come back while the client still holds its ends.
      await waitFor(async () => (await openFds(pid)) <= baselineFds + FD_SLACK, { timeoutMs: 10_000, what: 'the idle connections dropped' });
      expect(await garbage.release()).toEqual({ step: 'closed' });
      await sleep(HANDED_OVER_HELD_MS); // C's handed-over socket is closed by now
      const afterFds = await quietFds(pid);
      const rssAfter = await vmRssKiB(pid);

      let status: StatusJson | undefined;
      await waitFor(
        async () => {
          status = await announcerStatus(files.stateDir);
          return status.attachments.length === 0;
        },
        { timeoutMs: 20_000, intervalMs: 200, what: 'every burst over' },
      );
      expect({ source: status!.source, pid: status!.pid }).toEqual({ source: 'daemon', pid });
      expect((await daemonsOf(files.stateDir)).map((p) => p.pid)).toEqual([pid]);
      const frames = await capture.stop();
      console.info(
        `garbage: fds ${baselineFds} before, ${heldFds} with ${IDLE_CONNECTIONS} idle connections held, ${afterFds} after; ` +
          `VmRSS ${(rssBefore / 1024).toFixed(1)} MiB before, ${(rssAfter / 1024).toFixed(1)} MiB after; errors ${status!.counters!.errors}`,
      );

      // Every round of every pod went out: the two bursts running throughout and the ADD made meanwhile.
      const sent = [a, b, c].map((att, i) => ({ pod: att.containerId, garps: garpsFor(frames, pods[i]!.mac, pods[i]!.ip).length }));
      expect(sent).toEqual([
        { pod: a.containerId, garps: RUNNING.count },
        { pod: b.containerId, garps: RUNNING.count },
        { pod: c.containerId, garps: MEANWHILE.count },
      ]);
      expect(status!.counters!.rounds).toEqual({ sent: 2 * RUNNING.count + MEANWHILE.count, skippedNotReady: 0, skippedLate: 0 });
      expect(status!.counters!.errors).toBe(0);
      expect(afterFds).toBeLessThanOrEqual(baselineFds + FD_SLACK);
      expect(rssAfter).toBeLessThan(2 * rssBefore);

      for (const att of [a, b, c]) assertCniOk(`announcer DEL ${att.containerId}`, await announcerDel(att));
      await waitDaemonGone(files.stateDir, 10_000);
      expect(await files.stateFiles()).toEqual([]);
    },
    120_000,
  );

  it(
    `more idle connections than the announcer may open (RLIMIT_NOFILE 64): it stops accepting for a while instead of spinning on the listening socket, counts what failed, and recovers once they close`,
    async (ctx) => {
      skipTestUnless(ctx, PYTHON, PYTHON_MISSING);
      const s = scope();
      killStrays(s, { strict: true });
      const files = await announcerFiles(s);
      const net = allocSubnet();
      const bridge = await createBridge(s, { v4Cidr: net.v4Cidr(1), prefix: PREFIX });
      const [pod] = await createStandInFleet(s, { prefix: PREFIX, net, bridge, hosts: [10] });
      const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
      // The announcer inherits the ADD's limits; Bun raises the soft limit to the hard one, so both are set.
      const att = { ...attachmentOf(pod!, files, 'nofile'), command: { argv: ['prlimit', `--nofile=${FD_LIMIT}:${FD_LIMIT}`, ANNOUNCER] as [string, ...string[]] } };
      const burst = { count: 10, intervalMs: 500 };
      assertCniOk(`announcer ADD ${att.containerId}`, await announcerAdd(s, att, burst));
      const [daemon] = await daemonsOf(files.stateDir);
      const pid = daemon!.pid;
      await sleep(HANDED_OVER_HELD_MS);
      const baselineFds = await quietFds(pid);

      const garbage = startGarbageClient(s, join(files.stateDir, DAEMON_SOCKET), 2 * FD_LIMIT);
      for (const step of ['random', 'huge', 'invalid', 'held']) expect((await garbage.next()).step).toBe(step);
      await sleep(1500); // longer than a silent client is kept
      expect(await garbage.release()).toEqual({ step: 'closed' });
      await waitFor(async () => (await openFds(pid)) <= baselineFds + FD_SLACK, { timeoutMs: 5000, what: 'the announcer to get its fds back' });
      const status = await announcerStatus(files.stateDir);
      expect({ source: status.source, pid: status.pid }).toEqual({ source: 'daemon', pid });
      await waitFor(async () => (await announcerStatus(files.stateDir)).attachments.length === 0, { timeoutMs: 10_000, what: 'the burst over' });
      // A round that came due while no descriptor was left could not enter the pod, nor read its
      // record, nor log why (the pause on accept is unit-tested): it failed and was counted as an error (a record it cannot read ends
      // the burst as if DEL had removed it: a limit of this announcer, left for later).
      const { counters } = await announcerStatus(files.stateDir);
      const garps = garpsFor(await capture.stop(), pod!.mac, pod!.ip);
      expect(counters!.rounds.sent).toBe(garps.length);
      expect(counters!.errors).toBeGreaterThanOrEqual(1);
      assertCniOk(`announcer DEL ${att.containerId}`, await announcerDel(att));
      await waitDaemonGone(files.stateDir, 10_000);
    },
    60_000,
  );
});
