// Whose view of the file system a path is resolved in: the caller's. The stateDir's announcer is started by a first
// call from a private mount namespace (`unshare -m --propagation private`); the host's later calls then name netns
// files and a log file that namespace cannot see (created afterwards, or mounted on a tmpfs only the host has), and
// every round must still be on the wire, and the log lines in the host's file.
import { writeFile } from 'node:fs/promises';
import { readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ANNOUNCER,
  allocSubnet,
  announcerAdd,
  announcerDel,
  announcerFiles,
  assertCniOk,
  chainConfig,
  stateFiles,
  createPidNamespace,
  createNetns,
  createStandInPod,
  linkShow,
  setSysctl,
  daemonsOf,
  garpsFor,
  killDaemon,
  ms,
  podPrevResult,
  runOk,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  startCapture,
  waitFor,
  logged,
  waitLogged,
  type AnnouncerAttachment,
  type AnnouncerFiles,
  type Scope,
  type Subnet,
  tempDir,
} from './harness';
import { waitingForPod } from './harness/executor-steps';
import { cniExecInMountNs } from './harness/mountns-helpers';

const PREFIX = `cv${RUN_TAG}`;
const NETWORK = 'callerview';
const ROUNDS = { count: 3, intervalMs: 300 };

/** A stand-in pod at .host of `net`, its prevResult naming `netnsPath` (default its /run/netns path) as sandbox. */
async function standIn(s: Scope, net: Subnet, host: number) {
  const pod = await createStandInPod(s, {
    prefix: PREFIX,
    v4: [net.v4Cidr(host)],
    sysctls: { 'net.ipv4.conf.eth0.arp_notify': 0, 'net.ipv6.conf.eth0.disable_ipv6': 1 },
  });
  return { ...pod, ip: net.v4(host), cidr: net.v4Cidr(host) };
}

function attachment(
  pod: Awaited<ReturnType<typeof standIn>>,
  files: Pick<AnnouncerFiles, 'stateDir' | 'logFile'>,
  netns: string,
  tag: string,
): AnnouncerAttachment {
  return {
    mainConf: { name: NETWORK, cniVersion: '1.0.0' },
    prevResult: podPrevResult(netns, [{ name: pod.ifname, mac: pod.mac, addresses: [pod.cidr] }]),
    containerId: `${PREFIX}-${tag}`,
    netns,
    files,
    options: { logLevel: 'debug', idleExitMs: 30_000 },
  };
}

/**
 * The first ADD of the stateDir, from a private mount namespace: it starts the announcer there. `stayMs`: the namespace
 * outlives the ADD by this long (its shell sleeps after the plugin exits).
 */
async function addFromPrivateMountNs(att: AnnouncerAttachment, rounds: object = ROUNDS, stayMs = 0): Promise<void> {
  const { stateDir, logFile } = att.files;
  const own = { type: 'announcer', ...att.options, ...rounds, stateDir, logFile };
  const config = chainConfig(att.mainConf, own, att.prevResult);
  const call = { command: 'ADD' as const, containerId: att.containerId, ifname: 'eth0', netns: att.netns! };
  assertCniOk(
    'ADD from a private mount namespace',
    await cniExecInMountNs(ANNOUNCER, call, config, { prelude: ':', epilogue: `sleep ${stayMs / 1000}` }),
  );
}

/** Rounds of `pod` on its wire: exactly ROUNDS.count GARPs. */
async function expectEveryRound(s: Scope, pod: Awaited<ReturnType<typeof standIn>>, add: () => Promise<void>) {
  const capture = await startCapture(s, { netns: pod.netns.name, iface: pod.peer, filter: 'arp' });
  await add();
  await waitFor(async () => (await capture.count()) >= ROUNDS.count, { timeoutMs: 10_000, what: 'every round' });
  const frames = await capture.stop({ settleMs: 2 * ROUNDS.intervalMs });
  expect(garpsFor(frames, pod.mac, pod.ip)).toHaveLength(ROUNDS.count);
}

describe.skipIf(skipIntegration())("paths resolve in the caller's view of the file system", () => {
  const scope = scopePerTest(PREFIX);

  const announcerStartedInTitle =
    'an announcer started in a private mount namespace serves host calls whose ' +
    'netns, bind mounts and logFile it cannot see';
  it(announcerStartedInTitle, async () => {
    const s = scope();
    const files = await announcerFiles(s);
    const net = allocSubnet();
    const first = await standIn(s, net, 5);
    await addFromPrivateMountNs(attachment(first, files, first.netns.path, 'first'));
    const [daemon] = await daemonsOf(files.stateDir);
    expect(daemon, 'the announcer the first call started').toBeDefined();
    expect(readlinkSync(`/proc/${daemon!.pid}/ns/mnt`), 'it runs in another mount namespace').not.toBe(
      readlinkSync('/proc/self/ns/mnt'),
    );

    // Made after the announcer's mount namespace: a netns under /run/netns, and a tmpfs only the host has, holding a
    // bind mount of another netns and the host calls' log file.
    const later = await standIn(s, net, 6);
    const bound = await standIn(s, net, 7);
    const hostOnly = await tempDir(s, 'announcer-cv-');
    await runOk('mount', ['-t', 'tmpfs', 'none', hostOnly]);
    s.defer(() => runOk('umount', ['-R', hostOnly]), `umount ${hostOnly}`);
    const boundPath = join(hostOnly, 'netns-bound');
    await writeFile(boundPath, '');
    await runOk('mount', ['--bind', bound.netns.path, boundPath]);
    const hostFiles = { stateDir: files.stateDir, logFile: join(hostOnly, 'host.log') };

    const attLater = attachment(later, hostFiles, later.netns.path, 'later');
    await expectEveryRound(s, later, async () => void assertCniOk('ADD', await announcerAdd(s, attLater, ROUNDS)));
    const attBound = attachment(bound, hostFiles, boundPath, 'bound');
    await expectEveryRound(s, bound, async () => void assertCniOk('ADD', await announcerAdd(s, attBound, ROUNDS)));
    expect(
      (await daemonsOf(files.stateDir)).map((d) => d.pid),
      'one announcer served them all',
    ).toEqual([daemon!.pid]);

    // Round 1 by the command, the later rounds by the announcer's background, after the caller has exited.
    for (const { containerId } of [attLater, attBound])
      for (let round = 1; round <= ROUNDS.count; round++) {
        const announced = await logged(hostFiles.logFile, 'info', 'announced', { containerId, round });
        expect(announced, `${containerId} round ${round}`).toHaveLength(1);
      }
    assertCniOk('DEL', await announcerDel(attLater));
    assertCniOk('DEL', await announcerDel(attBound));
    const names = await stateFiles(files.stateDir);
    expect(names.filter((n) => n.includes('later') || n.includes('bound'))).toEqual([]);
  });

  it("a burst whose caller's view cannot be had again after a kill is skipped and logged", async () => {
    const s = scope();
    const files = await announcerFiles(s);
    const net = allocSubnet();
    const [starter, pod, next] = [await standIn(s, net, 5), await standIn(s, net, 6), await standIn(s, net, 7)];
    // The host starts the announcer; a caller in a private mount namespace sends a long burst. The namespace outlives
    // the caller (its shell sleeps on) until just after the kill: the next announcer finds no process in it.
    assertCniOk('ADD', await announcerAdd(s, attachment(starter, files, starter.netns.path, 'starter'), { count: 1 }));
    const capture = await startCapture(s, { netns: pod.netns.name, iface: pod.peer, filter: 'arp' });
    const att = attachment(pod, files, pod.netns.path, 'private');
    s.defer(async () => void (await announcerDel(att)), `DEL ${att.containerId}`);
    const added = addFromPrivateMountNs(att, { count: 10, intervalMs: 500 }, 2000);
    await waitFor(async () => (await capture.count()) >= 2, { timeoutMs: 10_000, what: 'round 2' });
    await killDaemon(files.stateDir);
    const killedAt = Date.now();
    await added;

    // The next announcer finds the burst in the record, and no view with its caller's namespaces.
    assertCniOk('ADD', await announcerAdd(s, attachment(next, files, next.netns.path, 'next'), { count: 1 }));
    await waitLogged(
      files,
      'warn',
      /^the caller's view of the file system cannot be re-opened/,
      {},
      { timeoutMs: 10_000 },
    );
    await sleep(1500); // three rounds' time: none of them may go out
    const after = garpsFor(await capture.stop(), pod.mac, pod.ip).filter((f) => ms(f) > killedAt);
    expect(after).toEqual([]);
    const skipped = await files.logged('warn', /cannot be re-opened/, { containerId: att.containerId });
    expect(skipped).not.toEqual([]);
    assertCniOk('DEL', await announcerDel(att));
  });

  it("refuses by name a caller whose pid the announcer's pid namespace cannot see (SO_PEERCRED gives 0)", async () => {
    const s = scope();
    const files = await announcerFiles(s);
    const pod = await standIn(s, allocSubnet(), 5);
    const ns = await createPidNamespace(s);
    const announcer = await ns.traceAnnouncer(ANNOUNCER, files.stateDir);
    const att = attachment(pod, files, pod.netns.path, 'pid0');
    const add = await announcerAdd(s, att, ROUNDS);
    expect(add.code).toBe(1);
    expect(JSON.parse(add.stdout)).toMatchObject({
      code: 100,
      msg: expect.stringMatching(/pid is not visible from the announcer's pid namespace \(SO_PEERCRED gave 0\)/),
    });
    assertCniOk("DEL goes on in the announcer's own view", await announcerDel(att));
    expect(await announcer.stop()).toEqual([]);
  });

  const looksPodHostTitle =
    "looks the pod's host side up in the caller's netns: a bridge port there " +
    'that is not forwarding holds round 1 back';
  it(looksPodHostTitle, async () => {
    const s = scope();
    const files = await announcerFiles(s);
    const net = allocSubnet();
    // The announcer runs in the test's netns (a first ADD from here starts it).
    const starter = await standIn(s, net, 5);
    assertCniOk('ADD', await announcerAdd(s, attachment(starter, files, starter.netns.path, 'starter'), { count: 1 }));
    // A node of its own: a bridge there, the pod's veth peer a port of it, held in learning.
    const node = await createNetns(s, PREFIX);
    const pod = await createNetns(s, PREFIX);
    const inNode = (...args: string[]) => runOk('ip', ['-n', node.name, ...args]);
    await inNode('link', 'add', 'br0', 'type', 'bridge', 'stp_state', '0');
    await inNode('link', 'add', 'vh0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pod.name);
    await inNode('link', 'set', 'vh0', 'master', 'br0');
    await inNode('link', 'set', 'br0', 'up');
    await inNode('link', 'set', 'vh0', 'up');
    await setSysctl('net.ipv4.conf.eth0.arp_notify', 0, pod.name);
    await setSysctl('net.ipv6.conf.eth0.disable_ipv6', 1, pod.name);
    await runOk('ip', ['-n', pod.name, 'addr', 'add', net.v4Cidr(9), 'dev', 'eth0']);
    await runOk('ip', ['-n', pod.name, 'link', 'set', 'eth0', 'up']);
    await runOk('bridge', ['-n', node.name, 'link', 'set', 'dev', 'vh0', 'state', '2']); // once it has carrier
    const mac = (await linkShow('eth0', pod.name))!.mac;
    const capture = await startCapture(s, { netns: pod.name, iface: 'eth0', filter: 'arp' });
    const att: AnnouncerAttachment = {
      mainConf: { name: NETWORK, cniVersion: '1.0.0' },
      prevResult: podPrevResult(pod.path, [{ name: 'eth0', mac, addresses: [net.v4Cidr(9)] }]),
      containerId: `${PREFIX}-node`,
      netns: pod.path,
      files,
      node: node.name,
      options: { logLevel: 'debug', count: 1, addWaitMs: 8000, readyTimeoutMs: 8000 },
    };
    const adding = announcerAdd(s, att);
    const waits = await waitingForPod(files, adding, { timeoutMs: 10_000, what: 'ADD to wait for the port' });
    expect(waits, "ADD waits for the bridge port in its caller's netns").toBe(true);
    await sleep(300);
    const forwardingAt = Date.now();
    await runOk('bridge', ['-n', node.name, 'link', 'set', 'dev', 'vh0', 'state', '3']);
    assertCniOk('ADD', await adding);
    const garps = garpsFor(await capture.stop(), mac, net.v4(9));
    expect(garps).toHaveLength(1);
    expect(ms(garps[0]!)).toBeGreaterThanOrEqual(forwardingAt - 50);
    assertCniOk('DEL', await announcerDel(att));
  });
});
