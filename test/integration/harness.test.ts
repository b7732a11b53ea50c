// Proves the integration harness against the real bridge plugin alone (no
// announcer): the stale-entry bug the README opens with reproduces, a gratuitous
// ARP sent by hand repairs it and decodes as one, kernel-sent announcements
// decode field by field, broken frames are flagged, and nothing is left behind.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isLive, procStat, startTimeOf } from './harness/proc-tree';
import {
  addBridgePod,
  allocSubnet,
  attachBridgePod,
  createBridge,
  createHostVeth,
  createNetns,
  createPodNetwork,
  createStandInPod,
  decodePcap,
  hostVeth,
  linkShow,
  leftovers,
  pingOnce,
  podInterface,
  readPcap,
  routesOverlapping,
  runOk,
  RUN_TAG,
  Scope,
  scopePerTest,
  skipIntegration,
  startCapture,
  waitFor,
  withScope,
  writePcap,
  tempDir,
} from './harness';

/** Every netns and link this file creates starts with this. */
const PREFIX = `h${RUN_TAG}`;
const BROADCAST = 'ff:ff:ff:ff:ff:ff';

describe('procStat', () => {
  // /proc/PID/stat lines: pid (comm) state ppid pgrp session tty tpgid flags … starttime (field 22).
  const line = (comm: string, state: string, flags: number) =>
    `4242 (${comm}) ${state} 1 4242 4242 0 -1 ${flags} 0 0 0 0 0 0 0 0 20 0 3 0 987654 1000 10 0`;

  it('says live for a running or sleeping process, and its start time, whatever its comm holds', () => {
    expect(procStat(line('announcer', 'S', 0x400100))).toEqual({ live: true, startTime: '987654' });
    expect(procStat(line('a (b) R', 'R', 0x400000))).toEqual({ live: true, startTime: '987654' });
  });

  it('says not live for a zombie, a dead task, and one that has begun to exit (PF_EXITING), even in the kernel', () => {
    expect(procStat(line('announcer', 'Z', 0x400104)).live).toBe(false);
    expect(procStat(line('announcer', 'X', 0)).live).toBe(false);
    expect(procStat(line('announcer', 'D', 0x400104)).live).toBe(false);
  });

  it('reads this test process as live, and another start time as another process', async () => {
    const start = await startTimeOf(process.pid);
    expect(await isLive(process.pid)).toBe(true);
    expect(await isLive(process.pid, start)).toBe(true);
    expect(await isLive(process.pid, `${start}0`)).toBe(false);
  });
});

describe('Scope', () => {
  it('runs every step newest first and collects failures instead of throwing', async () => {
    const scope = new Scope();
    const ran: string[] = [];
    scope.defer(() => void ran.push('first'), 'first');
    scope.defer(() => {
      ran.push('second');
      throw new Error('boom');
    }, 'second');
    scope.defer(async () => void ran.push('third'), 'third');
    const errors = await scope.close();
    expect(ran).toEqual(['third', 'second', 'first']);
    expect(errors.map((e) => e.message)).toEqual(['cleanup "second" failed: boom']);
  });

  it("withScope keeps the body's own error over a cleanup failure", async () => {
    let cleaned = false;
    const outcome = withScope(async (scope) => {
      scope.defer(() => {
        cleaned = true;
        throw new Error('cleanup broke');
      }, 'step');
      throw new Error('the test failed');
    });
    await expect(outcome).rejects.toThrow('the test failed');
    expect(cleaned).toBe(true);
  });

  it('closes a child scope early on its own, or with its parent, which reports its failures', async () => {
    const parent = new Scope();
    const ran: string[] = [];
    const early = parent.child('early');
    early.defer(() => void ran.push('early'));
    const late = parent.child('late');
    late.defer(() => {
      ran.push('late');
      throw new Error('boom');
    }, 'late step');
    expect(await early.close()).toEqual([]);
    expect(ran).toEqual(['early']);
    expect((await parent.close()).map((e) => e.message)).toEqual([
      'cleanup "late" failed: cleanup "late step" failed: boom',
    ]);
    expect(ran).toEqual(['early', 'late']);
  });
});

describe.skipIf(skipIntegration())('integration harness, real bridge plugin, no announcer', () => {
  const scope = scopePerTest(PREFIX);

  it('attaches pods to a bridge on a subnet no route of the node uses, and pings them', async () => {
    const network = await createPodNetwork(scope(), PREFIX);
    const subnet = `${network.net.v4(0)}/24`;
    expect(await routesOverlapping(subnet)).toContain(`${subnet} dev ${network.bridge}`);
    const pod = await attachBridgePod(scope(), {
      prefix: PREFIX,
      net: network.net,
      bridge: network.bridge,
      name: network.name,
    });
    expect(pod.mac).toBe(podInterface(pod.result)?.mac);
    expect(pod.chained({ type: 'next' })).toEqual({
      type: 'next',
      name: network.name,
      cniVersion: '1.0.0',
      prevResult: pod.result,
    });
    expect(await pingOnce(pod.ip)).toMatchObject({ replied: true, rttMs: expect.stringMatching(/^[\d.]+$/) });
    expect(await pingOnce(network.net.v4(6), 1)).toEqual({ replied: false });
  });

  it('decodes kernel announcements from a stand-in pod, and flags broken frames', async () => {
    const net = allocSubnet();
    const standIn = await createStandInPod(scope(), {
      prefix: PREFIX,
      v4: [net.v4Cidr(7)],
      v6: [net.v6Cidr(7)],
      sysctls: { 'net.ipv4.conf.eth0.arp_notify': 1, 'net.ipv6.conf.eth0.ndisc_notify': 1 },
    });
    const ns = standIn.netns.name;
    expect(await linkShow(standIn.ifname, ns)).toMatchObject({ up: true, operstate: 'UP', kind: 'veth' });
    expect(await linkShow(standIn.peer, ns)).toMatchObject({ up: true, operstate: 'UP', kind: 'veth' });

    // A MAC change makes the kernel announce (arp_notify / ndisc_notify): one GARP, and one NA per address.
    const capture = await startCapture(scope(), { netns: ns, iface: standIn.peer, filter: 'arp or icmp6' });
    const newMac = '02:00:5e:10:00:07';
    await runOk('ip', ['-n', ns, 'link', 'set', standIn.ifname, 'address', newMac]);
    const frames = await capture.stop();

    const garps = frames.filter((f) => f.arp?.isGratuitous);
    expect(garps).toHaveLength(1);
    expect(garps[0]).toMatchObject({
      eth: { src: newMac, dst: BROADCAST, type: 0x0806 },
      arp: { opcode: 1, senderMac: newMac, senderIp: net.v4(7), targetMac: '00:00:00:00:00:00', targetIp: net.v4(7) },
      malformed: false,
    });
    const nas = frames.filter((f) => f.icmpv6?.type === 136 && f.icmpv6.target === net.v6(7));
    expect(nas).toHaveLength(1);
    expect(nas[0]).toMatchObject({
      eth: { src: newMac, dst: '33:33:00:00:00:01', type: 0x86dd },
      ipv6: { src: net.v6(7), dst: 'ff02::1', hopLimit: 255 },
      icmpv6: {
        type: 136,
        code: 0,
        checksumStatus: 'good',
        flags: { router: false, solicited: false, override: true },
        target: net.v6(7),
        optionType: 2,
        linkAddr: newMac,
      },
      expert: [],
      malformed: false,
    });

    // The same frames, broken by hand: a flipped checksum bit and a truncated ARP body.
    const packets = readPcap(await readFile(capture.file)).packets;
    const na = Buffer.from(packets[nas[0]!.number - 1]!.data);
    const garp = packets[garps[0]!.number - 1]!.data;
    na[14 + 40 + 3] ^= 0x01;
    const dir = await tempDir(scope(), 'announcer-harness-');
    const file = join(dir, 'broken.pcap');
    await writeFile(file, writePcap([{ data: garp }, { data: garp.subarray(0, 14 + 20) }, { data: na }]));
    const decoded = await decodePcap(file);
    expect(decoded.map((f) => f.malformed)).toEqual([false, true, true]);
    expect(decoded[2]!.icmpv6!.checksumStatus).toBe('bad');
  });

  it('stops a capture that saw nothing with no frames', async () => {
    const standIn = await createStandInPod(scope(), { prefix: PREFIX });
    const capture = await startCapture(scope(), { netns: standIn.netns.name, iface: standIn.peer, filter: 'arp' });
    expect(await capture.count()).toBe(0);
    expect(await capture.stop()).toEqual([]);
    expect(capture.stats).toMatchObject({ captured: 0, droppedByKernel: 0 });
  });

  it('leaves no netns, link or host veth behind once its scope is closed', async () => {
    const own = new Scope();
    let hostSide: string;
    try {
      const net = allocSubnet();
      const bridge = await createBridge(own, { v4Cidr: net.v4Cidr(1), v6Cidr: net.v6Cidr(1), prefix: PREFIX });
      const podNs = await createNetns(own, PREFIX);
      const result = await addBridgePod(own, {
        bridge,
        netns: podNs.path,
        ip: net.v4Cidr(5),
        ip6: net.v6Cidr(5),
        gw: net.v4(1),
        containerId: `${PREFIX}-gone`,
      });
      hostSide = hostVeth(result, bridge)!.name;
      await createStandInPod(own, { prefix: PREFIX });
      await createHostVeth(own, PREFIX);
      await startCapture(own, { iface: bridge, filter: 'arp' });
      expect((await leftovers(PREFIX)).length).toBeGreaterThanOrEqual(5);
    } finally {
      expect(await own.close()).toEqual([]);
    }
    expect(await leftovers(PREFIX)).toEqual([]);
    await waitFor(async () => (await linkShow(hostSide)) === undefined, { what: `host veth ${hostSide} gone` });
  });
});
