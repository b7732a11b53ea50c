// IPv4 conflict detection before announcing (RFC 5227 probe), on
// the wire, with the real bridge plugin. A "squatter" is a pod on the same
// bridge that was given the same IPv4 address, so its kernel answers ARP for
// it: announcing that address would take the squatter's traffic. Only the
// announcer's own frames are judged: the kernel's arp_notify GARPs (on link
// up and on a MAC change; the bridge plugin sets arp_notify=1) are not ours,
// so tests that change the MAC turn arp_notify off in the pod first.
import { describe, expect, it } from 'vitest';
import {
  OLD_MAC,
  allocSubnet,
  announcerAdd,
  announcerDel,
  announcerFiles,
  announcerLeftovers,
  announcerStatus,
  derivedMac,
  attachBridgePod,
  bridgeWithKeeper,
  killStrays,
  linkShow,
  neighEntry,
  plantStale,
  run,
  runOk,
  RUN_TAG,
  scopePerTest,
  setSysctl,
  skipIntegration,
  startCapture,
  waitFor,
  waitLogged,
  type AnnouncerAttachment,
  type AnnouncerFiles,
  type Frame,
  type Scope,
  type Subnet,
  attachmentOf,
  type AttachmentHow,
  garpsFor,
} from './harness';

/** Every netns and link this file creates starts with this. */
const PREFIX = `cp${RUN_TAG}`;
const POD = 5;
const OTHER = 6;
const ZERO_MAC = '00:00:00:00:00:00';
/** In every config: the background announcer an ADD starts goes away soon after its last work. */
const IDLE_EXIT_MS = 300;

/** A pod on the bridge that holds host POD's address too, up and answering ARP for it; resolves with its MAC. */
async function addSquatter(scope: Scope, net: Subnet, bridge: string): Promise<string> {
  return (await attachBridgePod(scope, { prefix: PREFIX, net, bridge, host: POD, containerId: `${PREFIX}-squat` })).mac;
}

/**
 * ADDs the new pod through the bridge plugin with `hosts`' addresses (static
 * IPAM), then starts a capture of ARP on its host veth: what the announcer
 * sends from now on, and what comes back to it.
 */
async function addPod(scope: Scope, net: Subnet, bridge: string, name: string, hosts: number[] = [POD]) {
  const ipam = { type: 'static', addresses: hosts.map((h) => ({ address: net.v4Cidr(h), gateway: net.v4(1) })) };
  const how = { prefix: PREFIX, net, bridge, host: hosts[0]!, containerId: `${PREFIX}-${name}`, extra: { ipam } };
  const pod = await attachBridgePod(scope, how);
  return { ...pod, capture: await startCapture(scope, { iface: pod.hostVeth, filter: 'arp' }) };
}

/** The announcer's `options` with this file's idleExitMs, for attachmentOf. */
function withIdle(options: Record<string, unknown>): AttachmentHow {
  return { options: { ...options, idleExitMs: IDLE_EXIT_MS } };
}

/** ARP frames whose ARP sender MAC is one of `macs`. */
function arpFrom(frames: readonly Frame[], macs: readonly string[]): Frame[] {
  return frames.filter((f) => f.arp && macs.includes(f.arp.senderMac));
}

/** RFC 5227 probes (sender IP 0.0.0.0). */
function probesIn(frames: readonly Frame[]): Frame[] {
  return frames.filter((f) => f.arp?.senderIp === '0.0.0.0');
}

/**
 * What `warn` promises once both rounds are out: each address probed in both,
 * the squatted `ip` announced in neither and `other` in both, the conflict
 * logged; then DEL leaves nothing.
 */
async function expectSquattedLeftOut(
  att: AnnouncerAttachment & { files: AnnouncerFiles },
  frames: readonly Frame[],
  podMac: string,
  squatterMac: string,
  ip: string,
  other: string,
): Promise<void> {
  const ours = arpFrom(frames, [podMac]);
  expect(
    probesIn(ours)
      .map((f) => f.arp!.targetIp)
      .sort(),
  ).toEqual([ip, ip, other, other]);
  expect(garpsFor(frames, podMac, ip)).toEqual([]);
  expect(garpsFor(frames, podMac, other)).toHaveLength(2);
  const conflict =
    `address conflict: not announcing ${ip} is in use by the host with MAC ${squatterMac} ` +
    '(it answered ARP for that address on eth0)';
  const fields = { address: ip, mac: squatterMac, interface: 'eth0' };
  expect(await att.files.logged('warn', conflict, fields)).not.toEqual([]);
  expect(await announcerDel(att)).toMatchObject({ code: 0, stdout: '' });
  expect(await announcerLeftovers(att.files)).toEqual([]);
}

describe.skipIf(skipIntegration())('IPv4 conflict detection before announcing', () => {
  const scope = scopePerTest(PREFIX);

  /**
   * Per-test setup: strays fail the test (checked after everything else is undone), the announcer's files, a subnet and
   * its addresses, a bridge with a keeper.
   */
  async function begin() {
    killStrays(scope(), { strict: true });
    const files = await announcerFiles(scope());
    const net = allocSubnet();
    return {
      files,
      net,
      ip: net.v4(POD),
      other: net.v4(OTHER),
      bridge: await bridgeWithKeeper(scope(), net, { prefix: PREFIX }),
    };
  }

  const failSquatterAnswersTitle =
    'fail: a squatter answers the probe: code 106 naming the address, its MAC and ' +
    'the interface; no GARP from the new pod; nothing left';
  it(failSquatterAnswersTitle, async () => {
    const { files, net, ip, bridge } = await begin();
    const squatterMac = await addSquatter(scope(), net, bridge);
    const pod = await addPod(scope(), net, bridge, 'fail');

    const add = await announcerAdd(scope(), attachmentOf(pod, files, withIdle({ conflictCheck: 'fail', count: 1 })));
    const frames = await pod.capture.stop();

    expect(add.code, add.stdout).toBe(1);
    expect(add.json).toMatchObject({ code: 106 });
    expect(add.json.msg).toBe(
      `IPv4 address conflict: ${ip} is in use by the host with MAC ${squatterMac} (it answered ARP for ` +
        `that address on eth0): announcing nothing (conflictCheck: fail)`,
    );
    const ours = arpFrom(frames, [pod.mac]);
    // The window ended at the first answer: one probe, no GARP.
    expect(ours.map((f) => f.arp!.senderIp)).toEqual(['0.0.0.0']);
    expect(arpFrom(frames, [squatterMac]).filter((f) => f.arp!.opcode === 2 && f.arp!.senderIp === ip)).toHaveLength(1);
    expect(await announcerLeftovers(files)).toEqual([]);
    expect(await files.logged('error', 'ADD failed')).toHaveLength(1);
  });

  const failWithMacTitle =
    'fail with mac: ip-derived (arp_notify off in the pod): the MAC ADD set is put back, and still no GARP';
  it(failWithMacTitle, async () => {
    const { files, net, bridge } = await begin();
    const squatterMac = await addSquatter(scope(), net, bridge);
    const pod = await addPod(scope(), net, bridge, 'failmac');
    await setSysctl('net.ipv4.conf.eth0.arp_notify', 0, pod.netns.name);

    const options = { conflictCheck: 'fail', mac: 'ip-derived', count: 1 };
    const add = await announcerAdd(scope(), attachmentOf(pod, files, withIdle(options)));
    const eth0 = await linkShow('eth0', pod.netns.name);
    const frames = await pod.capture.stop();

    expect(add.code, add.stdout).toBe(1);
    expect(add.json).toMatchObject({ code: 106 });
    expect(add.json.msg).toContain(squatterMac);
    // The probe went out from the derived MAC; then the pod got its own MAC back.
    const ours = arpFrom(frames, [pod.mac, derivedMac(net.v4(POD))]);
    expect(ours.map((f) => [f.arp!.senderMac, f.arp!.senderIp])).toEqual([[derivedMac(net.v4(POD)), '0.0.0.0']]);
    expect(eth0?.mac).toBe(pod.mac);
    expect(await announcerLeftovers(files)).toEqual([]);
    const restored = { interface: 'eth0', mac: pod.mac };
    expect(await files.logged('info', 'restored the original MAC', restored)).toHaveLength(1);
  });

  const warnADDSucceedsTitle =
    'warn: ADD succeeds; the squatted address is announced in no round, the ' +
    'other one in every round; logged and counted';
  it(warnADDSucceedsTitle, async () => {
    const { files, net, ip, other, bridge } = await begin();
    const squatterMac = await addSquatter(scope(), net, bridge);
    const pod = await addPod(scope(), net, bridge, 'warn', [POD, OTHER]);
    // Round 2 from the background announcer, late enough for one that this ADD starts.
    const attachment = attachmentOf(pod, files, withIdle({ conflictCheck: 'warn', count: 2, intervalMs: 1500 }));

    const add = await announcerAdd(scope(), attachment);
    expect(add.code, add.stdout).toBe(0);
    expect(add.json).toEqual(pod.result);
    // Counted by the announcer this ADD started (it read the job, with its conflicts, from the record).
    await waitFor(async () => (await announcerStatus(files.stateDir)).counters?.conflicts === 1, {
      what: 'conflicts=1 in announcer status',
    });
    await waitLogged(files, 'info', 'announced', { round: 2 }, { timeoutMs: 10_000 });
    const frames = await pod.capture.stop();

    await expectSquattedLeftOut(attachment, frames, pod.mac, squatterMac, ip, other);
  });

  it('off (the default): no probe, the squatted address is announced as before', async () => {
    const { files, net, bridge } = await begin();
    await addSquatter(scope(), net, bridge);
    const pod = await addPod(scope(), net, bridge, 'off');

    const add = await announcerAdd(scope(), attachmentOf(pod, files, withIdle({ count: 1 })));
    const frames = await pod.capture.stop();

    expect(add.code, add.stdout).toBe(0);
    const ours = arpFrom(frames, [pod.mac]);
    expect(probesIn(ours)).toEqual([]);
    expect(garpsFor(frames, pod.mac, net.v4(POD))).toHaveLength(1);
    expect(await announcerLeftovers(files)).toEqual([]);
  });

  const cleanReuseREADMETitle =
    "a clean reuse (the README's stale-entry scenario): no conflict, the entry is " +
    'repaired when ADD returns; tshark decodes RFC 5227 probes';
  it(cleanReuseREADMETitle, async () => {
    const { files, net, ip, bridge } = await begin();
    await plantStale(bridge, ip, OLD_MAC);
    const pod = await addPod(scope(), net, bridge, 'clean');

    const add = await announcerAdd(scope(), attachmentOf(pod, files, withIdle({ conflictCheck: 'fail', count: 1 })));
    const entry = await neighEntry(bridge, ip);
    const ping = await run('ping', ['-c1', '-W2', ip]);
    const frames = await pod.capture.stop();

    expect(add.code, add.stdout).toBe(0);
    expect(add.json).toEqual(pod.result);
    expect(entry?.mac, `node entry for ${ip} (${entry?.state})`).toBe(pod.mac);
    expect(ping.code, ping.stdout).toBe(0);
    const ours = arpFrom(frames, [pod.mac]);
    const probes = probesIn(ours);
    // probes: 2 (the default), each an RFC 5227 probe as tshark reads it.
    expect(probes.map((f) => ({ eth: f.eth, arp: f.arp, malformed: f.malformed }))).toEqual(
      [1, 2].map(() => ({
        eth: { src: pod.mac, dst: 'ff:ff:ff:ff:ff:ff', type: 0x0806 },
        arp: {
          opcode: 1,
          senderMac: pod.mac,
          senderIp: '0.0.0.0',
          targetMac: ZERO_MAC,
          targetIp: ip,
          isGratuitous: false,
        },
        malformed: false,
      })),
    );
    const garps = garpsFor(frames, pod.mac, ip);
    expect(garps).toHaveLength(1);
    expect(probes.every((p) => p.number < garps[0]!.number)).toBe(true);
    expect(await files.logged('warn', /conflict/)).toEqual([]);
    expect(await announcerLeftovers(files)).toEqual([]);
  });

  it('an attachment that opted out is never probed, even with conflictCheck fail and a squatter', async () => {
    const { files, net, bridge } = await begin();
    await addSquatter(scope(), net, bridge);
    const pod = await addPod(scope(), net, bridge, 'optout');
    await setSysctl('net.ipv4.conf.eth0.arp_notify', 0, pod.netns.name);

    // mac: ip-derived takes ADD into the pod (MACs are still set); the opt-out stops the rest.
    const options = { conflictCheck: 'fail', mac: 'ip-derived', count: 1, args: { cni: { announce: false } } };
    const add = await announcerAdd(scope(), attachmentOf(pod, files, withIdle(options)));
    const frames = await pod.capture.stop();

    expect(add.code, add.stdout).toBe(0);
    expect(arpFrom(frames, [pod.mac, derivedMac(net.v4(POD))])).toEqual([]);
    expect(await files.logged('info', 'announcements disabled for this attachment: sending nothing')).toHaveLength(1);
  });

  const deferredNotReadyTitle =
    'deferred (not ready during ADD): the background announcer probes once the ' +
    'pod is ready; fail acts as warn there, and says so';
  it(deferredNotReadyTitle, async () => {
    const { files, net, ip, other, bridge } = await begin();
    const squatterMac = await addSquatter(scope(), net, bridge);
    const pod = await addPod(scope(), net, bridge, 'defer', [POD, OTHER]);
    const ns = pod.netns.name;
    // Only the announcer may send ARP when eth0 comes back up.
    await setSysctl('net.ipv4.conf.eth0.arp_notify', 0, ns);
    await runOk('ip', ['-n', ns, 'link', 'set', 'eth0', 'down']);
    const options = { conflictCheck: 'fail', count: 2, intervalMs: 1500, addWaitMs: 100, readyTimeoutMs: 30000 };
    const attachment = attachmentOf(pod, files, withIdle(options));

    const add = await announcerAdd(scope(), attachment);
    expect(add.code, add.stdout).toBe(0);
    await runOk('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
    await waitLogged(files, 'info', 'announced', { round: 1, deferred: true }, { timeoutMs: 10_000 });
    // Round 2 is 1.5 s away: the announcer is still there to ask.
    expect((await announcerStatus(files.stateDir)).counters?.conflicts).toBe(1);
    await waitLogged(files, 'info', 'announced', { round: 2 }, { timeoutMs: 10_000 });
    const frames = await pod.capture.stop();

    await expectSquattedLeftOut(attachment, frames, pod.mac, squatterMac, ip, other);
    const instead = 'conflictCheck is fail, but ADD has returned: leaving the addresses out instead';
    expect(await files.logged('warn', instead)).toHaveLength(1);
  });

  const deferredRoundProbeTitle =
    "deferred round 1's probe holds no other pod: B's round 2, due in A's 2 s window, " +
    "is on the wire between A's first probe and A's round 1";
  it(deferredRoundProbeTitle, async () => {
    const { files, net, ip, other, bridge } = await begin();
    const a = await addPod(scope(), net, bridge, 'probing', [POD]);
    const b = await addPod(scope(), net, bridge, 'other', [OTHER]);
    // Only the announcer may send ARP when A's eth0 comes back up.
    await setSysctl('net.ipv4.conf.eth0.arp_notify', 0, a.netns.name);
    await runOk('ip', ['-n', a.netns.name, 'link', 'set', 'eth0', 'down']);
    const onBridge = await startCapture(scope(), { iface: bridge, filter: 'arp' });
    const options = { conflictCheck: 'warn', probeMs: 2000, count: 1, addWaitMs: 100, readyTimeoutMs: 30000 };
    const attA = attachmentOf(a, files, withIdle(options));
    const attB = attachmentOf(b, files, withIdle({ count: 2, intervalMs: 1000 }));

    const addA = await announcerAdd(scope(), attA);
    expect(addA.code, addA.stdout).toBe(0);
    const addB = await announcerAdd(scope(), attB);
    expect(addB.code, addB.stdout).toBe(0);
    // A is ready at once: its 2 s window starts about when B's round 2 is 1 s away.
    await runOk('ip', ['-n', a.netns.name, 'link', 'set', 'eth0', 'up']);
    const roundOfA = { containerId: attA.containerId, round: 1, deferred: true };
    await waitLogged(files, 'info', 'announced', roundOfA, { timeoutMs: 10_000 });
    await waitLogged(files, 'info', 'announced', { containerId: attB.containerId, round: 2 }, { timeoutMs: 10_000 });
    const frames = await onBridge.stop();

    const at = (frame: Frame | undefined): number => (frame ? frames.indexOf(frame) : -1);
    const aProbe = at(probesIn(arpFrom(frames, [a.mac]))[0]);
    const bGarps = garpsFor(frames, b.mac, other);
    const aGarp = at(garpsFor(frames, a.mac, ip)[0]);
    expect(bGarps).toHaveLength(2);
    expect({ aProbe: aProbe >= 0, aGarp: aGarp >= 0 }).toEqual({ aProbe: true, aGarp: true });
    // The order: A's first probe, B's round 2, A's round 1.
    expect(aProbe).toBeLessThan(at(bGarps[1]));
    expect(at(bGarps[1])).toBeLessThan(aGarp);
    for (const att of [attA, attB]) expect(await announcerDel(att)).toMatchObject({ code: 0, stdout: '' });
    expect(await announcerLeftovers(files)).toEqual([]);
  });
});
