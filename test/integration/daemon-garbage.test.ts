// Garbage on the announcer's stream socket (announcer.sock) stops no one's
// service: while two pods' bursts run, the test process sends it random
// bytes, a 1 MiB line, a line past its limit and invalid request lines, then
// holds 500 connections open without a word. An ADD made meanwhile (through
// the announcer) still gets every round; the announcer keeps its pid, answers
// `announcer status`, drops the idle connections and lets go of their
// descriptors, and its memory does not balloon. Oracles: tcpdump and tshark
// for the frames, /proc/PID/fd and /proc/PID/status of the announcer process
// this test started.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_REQUEST_LINE } from '../../src/protocol';
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
  holdIdleConnections,
  INVALID_LINES,
  killStrays,
  leftoversAfterTeardown,
  ownAnnouncerProcesses,
  RUN_TAG,
  scopePerTest,
  type Scope,
  type AnnouncerAttachment,
  type AnnouncerFiles,
  sendGarbage,
  skipIntegration,
  startCapture,
  waitDaemonGone,
  waitFor,
  type GarbageReplies,
  type StatusJson,
  attachmentOf,
  type AttachmentHow,
} from './harness';

/** Every netns and link this file creates starts with this. */
const PREFIX = `g${RUN_TAG}`;
const NETWORK = `garbage-${RUN_TAG}`;
const IDLE_CONNECTIONS = 500;
/** The bursts running while the garbage arrives, and the one ADDed meanwhile. */
const RUNNING = { count: 10, intervalMs: 700 };
const MEANWHILE = { count: 5, intervalMs: 300 };
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

/** An attachment of a fleet pod. */
type Att = AnnouncerAttachment & { files: AnnouncerFiles };

/** The announcer chained on a fleet pod's eth0 as container `tag`. */
function tagged(tag: string): AttachmentHow {
  return { network: NETWORK, containerId: `${PREFIX}-${tag}`, options: { logLevel: 'info', idleExitMs: 3000 } };
}

/**
 * Every line got the announcer's refusal (`{refused: why}`), and the line past
 * its limit was dropped without a word (the announcer stops reading it).
 */
function expectRefusals(got: GarbageReplies): void {
  const refusal = { refused: expect.any(String) };
  const parsed = (line: string | null): unknown => (line === null ? null : JSON.parse(line));
  expect({
    random: got.random.map(parsed),
    huge: parsed(got.huge),
    overLimit: parsed(got.overLimit),
    invalid: got.invalid.map(parsed),
  }).toEqual({
    random: Array.from({ length: 20 }, () => refusal),
    huge: refusal,
    overLimit: null,
    invalid: INVALID_LINES.map(() => refusal),
  });
  expect(got.hugeBytes).toBeGreaterThan(1 << 20);
  expect(got.overLimitBytes).toBeGreaterThan(MAX_REQUEST_LINE);
}

/**
 * Per-test setup: strays fail the test, the announcer's files, stand-in pods at `hosts` on a bridge of their own and
 * an ARP capture on it.
 */
async function podsOnBridge(s: Scope, hosts: number[]) {
  killStrays(s, { strict: true });
  const files = await announcerFiles(s);
  const net = allocSubnet();
  const bridge = await createBridge(s, { v4Cidr: net.v4Cidr(1), prefix: PREFIX });
  const pods = await createStandInFleet(s, { prefix: PREFIX, net, bridge, hosts });
  return { files, pods, capture: await startCapture(s, { iface: bridge, filter: 'arp' }) };
}

describe.skipIf(skipIntegration())('the background announcer and garbage on its control socket', () => {
  const scope = scopePerTest();

  afterAll(async () => {
    expect(await ownAnnouncerProcesses()).toEqual([]);
    expect(await leftoversAfterTeardown(PREFIX)).toEqual([]);
  }, 60_000);

  const randomBytesMiBTitle =
    `random bytes, a 1 MiB line, a line past the limit, invalid requests and ${IDLE_CONNECTIONS} idle ` +
    `connections: an ADD meanwhile gets every round, same pid, status answers, the idle ones dropped, fds ` +
    `back to baseline, RSS < 2×`;
  it(randomBytesMiBTitle, async () => {
    const s = scope();
    const { files, pods, capture } = await podsOnBridge(s, [10, 11, 12]);
    const [a, b, c] = ['a', 'b', 'c'].map((tag, i) => attachmentOf(pods[i]!, files, tagged(tag))) as [Att, Att, Att];

    for (const att of [a, b]) assertCniOk(`announcer ADD ${att.containerId}`, await announcerAdd(s, att, RUNNING));
    const [daemon, ...more] = await daemonsOf(files.stateDir);
    expect(more).toEqual([]);
    const pid = daemon!.pid;
    const baselineFds = await quietFds(pid);
    const rssBefore = await vmRssKiB(pid);

    const socket = join(files.stateDir, DAEMON_SOCKET);
    expectRefusals(await sendGarbage(socket, MAX_REQUEST_LINE));
    const idle = await holdIdleConnections(s, socket, IDLE_CONNECTIONS);
    const heldFds = await openFds(pid);

    // Meanwhile: an ADD, and status.
    assertCniOk(`announcer ADD ${c.containerId}`, await announcerAdd(s, c, MEANWHILE));
    const during = await announcerStatus(files.stateDir);
    expect({ source: during.source, pid: during.pid }).toEqual({ source: 'daemon', pid });

    // A client that says nothing is dropped: the announcer closes each, and its fds come back while the client still
    // holds its ends.
    await waitFor(async () => idle.closedByPeer() === IDLE_CONNECTIONS, {
      timeoutMs: 10_000,
      what: 'the idle connections dropped',
    });
    await waitFor(async () => (await openFds(pid)) <= baselineFds + FD_SLACK, {
      timeoutMs: 10_000,
      what: 'the announcer to let go of their fds',
    });
    await idle.release();
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
      `garbage: fds ${baselineFds} before, ${heldFds} with ${IDLE_CONNECTIONS} idle connections ` +
        `held, ${afterFds} after; ` +
        `VmRSS ${(rssBefore / 1024).toFixed(1)} MiB before, ${(rssAfter / 1024).toFixed(1)} MiB after; ` +
        `errors ${status!.counters!.errors}`,
    );

    // Every round of every pod went out: the two bursts running throughout and the ADD made meanwhile.
    const sent = [a, b, c].map((att, i) => ({
      pod: att.containerId,
      garps: garpsFor(frames, pods[i]!.mac, pods[i]!.ip).length,
    }));
    expect(sent).toEqual([
      { pod: a.containerId, garps: RUNNING.count },
      { pod: b.containerId, garps: RUNNING.count },
      { pod: c.containerId, garps: MEANWHILE.count },
    ]);
    expect(status!.counters!.rounds).toEqual({
      sent: 2 * RUNNING.count + MEANWHILE.count,
      skippedNotReady: 0,
      skippedLate: 0,
    });
    expect(status!.counters!.errors).toBe(0);
    expect(afterFds).toBeLessThanOrEqual(baselineFds + FD_SLACK);
    expect(rssAfter).toBeLessThan(2 * rssBefore);

    for (const att of [a, b, c]) assertCniOk(`announcer DEL ${att.containerId}`, await announcerDel(att));
    await waitDaemonGone(files.stateDir, 10_000);
    expect(await files.stateFiles()).toEqual([]);
  }, 120_000);

  const moreIdleConnectionsTitle =
    `more idle connections than the announcer may open (RLIMIT_NOFILE 64): it stops accepting for a while instead ` +
    `of spinning on the listening socket, counts what failed, and recovers once they close`;
  it(moreIdleConnectionsTitle, async () => {
    const s = scope();
    const { files, pods, capture } = await podsOnBridge(s, [10]);
    const pod = pods[0];
    // The announcer inherits the limits of the ADD that starts it; Bun raises the soft limit to the hard one, so both
    // are set.
    const att = {
      ...attachmentOf(pod!, files, tagged('nofile')),
      command: { argv: ['prlimit', `--nofile=${FD_LIMIT}:${FD_LIMIT}`, ANNOUNCER] as [string, ...string[]] },
    };
    const burst = { count: 10, intervalMs: 500 };
    assertCniOk(`announcer ADD ${att.containerId}`, await announcerAdd(s, att, burst));
    const [daemon] = await daemonsOf(files.stateDir);
    const pid = daemon!.pid;
    const baselineFds = await quietFds(pid);

    const socket = join(files.stateDir, DAEMON_SOCKET);
    expectRefusals(await sendGarbage(socket, MAX_REQUEST_LINE));
    const idle = await holdIdleConnections(s, socket, 2 * FD_LIMIT);
    await sleep(1500); // longer than a silent client is kept
    await idle.release();
    await waitFor(async () => (await openFds(pid)) <= baselineFds + FD_SLACK, {
      timeoutMs: 5000,
      what: 'the announcer to get its fds back',
    });
    const status = await announcerStatus(files.stateDir);
    expect({ source: status.source, pid: status.pid }).toEqual({ source: 'daemon', pid });
    await waitFor(async () => (await announcerStatus(files.stateDir)).attachments.length === 0, {
      timeoutMs: 10_000,
      what: 'the burst over',
    });
    // A round that came due while no descriptor was left could not enter the pod, nor read its record, nor log why
    // (the pause on accept is unit-tested): it failed and was counted as an error (a record it cannot read ends the
    // burst as if DEL had removed it: a limit of this announcer, left for later).
    const { counters } = await announcerStatus(files.stateDir);
    const garps = garpsFor(await capture.stop(), pod!.mac, pod!.ip);
    expect(counters!.rounds.sent).toBe(garps.length);
    expect(counters!.errors).toBeGreaterThanOrEqual(1);
    assertCniOk(`announcer DEL ${att.containerId}`, await announcerDel(att));
    await waitDaemonGone(files.stateDir, 10_000);
  }, 60_000);
});
