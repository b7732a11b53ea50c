// Unsolicited NA next to the gratuitous ARP, DAD-aware, dual stack,
// several pod interfaces, main plugins without a bridge port (macvlan, ipvlan
// L3), judged by tshark. Real bridge and macvlan plugins, real namespaces.
import { describe, expect, it } from 'vitest';
import {
  OLD_MAC,
  addMacvlanPod,
  addStandInInterface,
  allocSubnet,
  announcerAdd,
  attachmentOf,
  announcerDel,
  announcerFiles,
  announcerLeftovers,
  createChildPod,
  createL2Node,
  createNetns,
  createStandInPod,
  killStrays,
  logRecords,
  macvlanConfig,
  neighEntry,
  plantStale,
  podInterface,
  podPrevResult,
  run,
  runOk,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  skipTestUnless,
  startCapture,
  stalePod,
  type Frame,
} from './harness';

/** Every netns and link this file creates starts with this. */
const PREFIX = `b6${RUN_TAG}`;
const BROADCAST = 'ff:ff:ff:ff:ff:ff';
const ALL_NODES_MAC = '33:33:00:00:00:01';
const ZERO_MAC = '00:00:00:00:00:00';
const POD_HOST = 5;
/** The main plugin's config of the stand-in pods, whose prevResult the tests write. */
const mainConf = { name: 'harness', cniVersion: '1.0.0' };

const isGarp = (f: Frame): boolean => f.arp !== undefined && f.arp.senderIp === f.arp.targetIp;
const isNa = (f: Frame, target?: string): boolean =>
  f.icmpv6?.type === 136 && (target === undefined || f.icmpv6.target === target);

describe.skipIf(skipIntegration())('IPv6 and main plugins', () => {
  const scope = scopePerTest(PREFIX);

  /**
   * Per-test setup: strays fail the test (checked after everything else is
   * undone), the announcer's own state dir and log, a subnet, and the pod's
   * addresses in it.
   */
  async function begin() {
    killStrays(scope(), { strict: true });
    const files = await announcerFiles(scope());
    const net = allocSubnet();
    return { files, net, ip4: net.v4(POD_HOST), ip6: net.v6(POD_HOST) };
  }

  /**
   * begin(), a dual-stack stalePod (IPv4 and IPv6 entries planted) with a capture (ARP and ICMPv6) on its host
   * veth, then the announcer's ADD with `options`. The capture is still running.
   */
  async function addOnCapturedBridgePod(tag: string, options: Record<string, unknown>) {
    const { files, net, ip4, ip6 } = await begin();
    const pod = await stalePod(scope(), { prefix: PREFIX, net, ip6: true, containerId: `${PREFIX}-${tag}` });
    const capture = await startCapture(scope(), { iface: pod.hostVeth, filter: 'arp or icmp6' });
    const add = await announcerAdd(scope(), attachmentOf(pod, files, { options }));
    return { ...pod, files, ip4, ip6, capture, add };
  }

  const bridgeDualStackTitle =
    'bridge, dual stack: stale IPv4 and IPv6 entries on the node hold the new ' +
    'MAC when ADD returns; ping and ping -6 work';
  it(bridgeDualStackTitle, async () => {
    const { files, net, ip4, ip6 } = await begin();
    const pod = await stalePod(scope(), { prefix: PREFIX, net, ip6: true, containerId: `${PREFIX}-dual` });
    const { bridge, result, mac: podMac } = pod;
    // Without the announcer, both entries still point at the departed pod.
    expect((await neighEntry(bridge, ip4))?.mac).toBe(OLD_MAC);
    expect((await neighEntry(bridge, ip6))?.mac).toBe(OLD_MAC);

    const attachment = attachmentOf(pod, files);
    const add = await announcerAdd(scope(), attachment);
    const entry4 = await neighEntry(bridge, ip4);
    const entry6 = await neighEntry(bridge, ip6);
    const ping4 = await run('ping', ['-c1', '-W2', ip4]);
    const ping6 = await run('ping', ['-6', '-c1', '-W2', ip6]);

    expect(add.code, add.stdout).toBe(0);
    expect(add.json).toEqual(result);
    expect(entry4?.mac, `IPv4 entry (${entry4?.state})`).toBe(podMac);
    expect(entry6?.mac, `IPv6 entry (${entry6?.state})`).toBe(podMac);
    expect(ping4.code, ping4.stdout).toBe(0);
    expect(ping6.code, ping6.stdout).toBe(0);

    expect(await announcerDel(attachment)).toMatchObject({ code: 0, stdout: '' });
    expect(await announcerLeftovers(files)).toEqual([]);
  });

  const macvlanNeighbourPodTitle =
    "macvlan: a neighbour pod's stale IPv4 and IPv6 entries hold the new MAC " +
    'when ADD returns; no NA before DAD is over';
  it(macvlanNeighbourPodTitle, async () => {
    const { files, net, ip4, ip6 } = await begin();
    const node = await createL2Node(scope(), PREFIX);
    const neighbour = await createChildPod(scope(), node, { prefix: PREFIX, v4: [net.v4Cidr(7)], v6: [net.v6Cidr(7)] });
    const nb = neighbour.netns.name;
    await plantStale('eth0', ip4, OLD_MAC, nb);
    await plantStale('eth0', ip6, OLD_MAC, nb);
    const capture = await startCapture(scope(), { netns: node.netns.name, iface: node.parent, filter: 'arp or icmp6' });

    const podNs = await createNetns(scope(), PREFIX);
    const containerId = `${PREFIX}-macvlan`;
    const addresses = [net.v4Cidr(POD_HOST), net.v6Cidr(POD_HOST)];
    const { result } = await addMacvlanPod(scope(), { node, netns: podNs.path, containerId, addresses });
    const pod = podInterface(result);
    expect(pod?.sandbox).toBe(podNs.path);
    const podMac = pod!.mac;
    // The macvlan plugin alone sends no NA (ndisc_notify is 0): the IPv6 entry still holds the old MAC.
    expect((await neighEntry('eth0', ip6, nb))?.mac).toBe(OLD_MAC);

    const attachment = {
      mainConf: macvlanConfig({ node, addresses }),
      prevResult: result,
      containerId,
      netns: podNs.path,
      files,
      node: node.netns.name,
      // Round 1 alone (ADD's): the capture holds exactly what ADD sent. DAD may take up to about 2 s (a random delay
      // of up to 1 s, then the 1 s RetransTimer), the default addWaitMs: ADD waits longer, so that it is over.
      options: { count: 1, addWaitMs: 5000 },
    };
    const announcerStartedAt = Date.now();
    const add = await announcerAdd(scope(), attachment);
    const entry4 = await neighEntry('eth0', ip4, nb);
    const entry6 = await neighEntry('eth0', ip6, nb);
    const frames = await capture.stop();

    expect(add.code, add.stdout).toBe(0);
    expect(add.json).toEqual(result);
    expect(entry4?.mac, `neighbour's IPv4 entry (${entry4?.state})`).toBe(podMac);
    expect(entry6?.mac, `neighbour's IPv6 entry (${entry6?.state})`).toBe(podMac);

    // The macvlan plugin sends a GARP of its own when it configures the
    // address; ours are those captured after the announcer started (both wall clock).
    const garps = frames.filter(
      (f) => f.eth.src === podMac && isGarp(f) && f.arp!.senderIp === ip4 && f.time * 1000 >= announcerStartedAt,
    );
    expect(garps).toHaveLength(1);
    expect(garps[0]!.arp).toMatchObject({ opcode: 1, senderMac: podMac, targetMac: ZERO_MAC, targetIp: ip4 });
    const nas = frames.filter((f) => isNa(f, ip6));
    expect(nas).toHaveLength(1);
    for (const na of nas) {
      expect(na).toMatchObject({
        eth: { src: podMac, dst: ALL_NODES_MAC },
        ipv6: { src: ip6, hopLimit: 255 },
        icmpv6: {
          flags: { router: false, solicited: false, override: true },
          linkAddr: podMac,
          checksumStatus: 'good',
        },
        malformed: false,
      });
    }
    // DAD ran (its NS has the unspecified source), and every NA left after it,
    // with at least half of DAD's 1 s RetransTimer in between.
    const dadNs = frames.filter((f) => f.icmpv6?.type === 135 && f.ipv6?.src === '::' && f.icmpv6.target === ip6);
    expect(dadNs).toHaveLength(1); // dad_transmits 1, the kernel's default
    const lastDad = Math.max(...dadNs.map((f) => f.time));
    for (const na of nas) expect(na.time).toBeGreaterThan(lastDad + 0.5);
    expect(await files.logged('info', 'announced', { round: 1 })).toHaveLength(1);
    expect(logRecords(await files.log()).filter((r) => r.msg.includes('not ready'))).toEqual([]);

    expect(await announcerDel(attachment)).toMatchObject({ code: 0, stdout: '' });
    expect(await announcerLeftovers(files)).toEqual([]);
  });

  it('tshark: with arpOp "both" on dual stack, every frame from the pod is well-formed, field by field', async () => {
    const added = await addOnCapturedBridgePod('tshark', { arpOp: 'both', count: 1 });
    const { files, ip4, ip6, mac: podMac, capture, add } = added;
    const frames = (await capture.stop()).filter((f) => f.eth.src === podMac);
    expect(add.code, add.stdout).toBe(0);

    for (const f of frames) {
      expect(f.malformed, `frame ${f.number}`).toBe(false);
      const flagged = f.expert.filter((e) => e.severity === 'error' || e.severity === 'warn');
      expect(flagged, `frame ${f.number}`).toEqual([]);
    }
    const requests = frames.filter((f) => f.arp?.opcode === 1);
    const replies = frames.filter((f) => f.arp?.opcode === 2);
    const nas = frames.filter((f) => isNa(f));
    expect(requests).toHaveLength(1);
    expect(replies).toHaveLength(1);
    expect(nas).toHaveLength(1);
    expect(requests[0]).toMatchObject({
      eth: { src: podMac, dst: BROADCAST, type: 0x0806 },
      arp: { opcode: 1, senderMac: podMac, senderIp: ip4, targetMac: ZERO_MAC, targetIp: ip4, isGratuitous: true },
    });
    expect(replies[0]).toMatchObject({
      eth: { src: podMac, dst: BROADCAST, type: 0x0806 },
      arp: { opcode: 2, senderMac: podMac, senderIp: ip4, targetMac: podMac, targetIp: ip4, isGratuitous: true },
    });
    expect(nas[0]).toMatchObject({
      eth: { src: podMac, dst: ALL_NODES_MAC, type: 0x86dd },
      ipv6: { src: ip6, dst: 'ff02::1', hopLimit: 255 },
      icmpv6: {
        type: 136,
        code: 0,
        checksumStatus: 'good',
        flags: { router: false, solicited: false, override: true },
        target: ip6,
        optionType: 2,
        optionTypes: [2],
        linkAddr: podMac,
      },
      expert: [],
      malformed: false,
    });
    expect(await announcerLeftovers(files)).toEqual([]);
  });

  it('the interfaces option narrows: with interfaces ["net1"], frames only on net1', async () => {
    const { files, net } = await begin();
    const standIn = await createStandInPod(scope(), {
      prefix: PREFIX,
      v4: [net.v4Cidr(5)],
      v6: [net.v6Cidr(5)],
      sysctls: { 'net.ipv4.conf.eth0.arp_notify': 0 },
    });
    const ns = standIn.netns.name;
    const net1Mac = await addStandInInterface(standIn, {
      ifname: 'net1',
      peer: 'peer1',
      v4: [net.v4Cidr(6)],
      v6: [net.v6Cidr(6)],
      sysctls: { 'net.ipv4.conf.net1.arp_notify': 0 },
    });
    const prevResult = podPrevResult(standIn.netns.path, [
      { name: 'eth0', mac: standIn.mac, addresses: [net.v4Cidr(5), net.v6Cidr(5)] },
      { name: 'net1', mac: net1Mac, addresses: [net.v4Cidr(6), net.v6Cidr(6)] },
    ]);
    const onEth0 = await startCapture(scope(), { netns: ns, iface: standIn.peer, filter: 'arp or icmp6' });
    const onNet1 = await startCapture(scope(), { netns: ns, iface: 'peer1', filter: 'arp or icmp6' });

    const how = { containerId: `${PREFIX}-narrow`, netns: standIn.netns.path, files };
    const add = await announcerAdd(scope(), {
      mainConf,
      prevResult,
      ...how,
      options: { interfaces: ['net1'], count: 1 },
    });
    const [eth0Frames, net1Frames] = [await onEth0.stop(), await onNet1.stop()];

    expect(add.code, add.stdout).toBe(0);
    expect(add.json).toEqual(prevResult);
    expect(eth0Frames.filter((f) => f.arp || isNa(f))).toEqual([]);
    const garps = net1Frames.filter(isGarp);
    const nas = net1Frames.filter((f) => isNa(f));
    expect(garps.map((f) => [f.eth.src, f.arp!.senderIp])).toEqual([[net1Mac, net.v4(6)]]);
    expect(nas.map((f) => [f.eth.src, f.icmpv6!.target])).toEqual([[net1Mac, net.v6(6)]]);
    expect(await announcerLeftovers(files)).toEqual([]);
  });

  it('ipvlan L3: ADD exits 0, sends nothing and logs why (skipped where the kernel has no ipvlan)', async (ctx) => {
    const { files, net } = await begin();
    const node = await createL2Node(scope(), PREFIX);
    const ipvlan = ['ipvprobe', 'link', node.parent, 'type', 'ipvlan', 'mode', 'l3'];
    const probe = await run('ip', ['-n', node.netns.name, 'link', 'add', ...ipvlan]);
    if (probe.code !== 0) {
      // Only a kernel without the driver skips; any other failure of the probe fails the test.
      expect(probe.stderr, 'ip link add … type ipvlan mode l3').toMatch(/Unknown device type/);
      skipTestUnless(
        ctx,
        'the ipvlan driver in this kernel',
        `\`ip link add … type ipvlan mode l3\` says ${probe.stderr.trim()}`,
        'skip',
      );
    }
    await runOk('ip', ['-n', node.netns.name, 'link', 'del', 'ipvprobe']);
    const capture = await startCapture(scope(), { netns: node.netns.name, iface: node.parent, filter: 'arp or icmp6' });
    const pod = await createChildPod(scope(), node, {
      prefix: PREFIX,
      v4: [net.v4Cidr(POD_HOST)],
      v6: [net.v6Cidr(POD_HOST)],
      type: ['ipvlan', 'mode', 'l3'],
    });
    const prevResult = podPrevResult(pod.netns.path, [
      { name: 'eth0', mac: pod.mac, addresses: [net.v4Cidr(POD_HOST), net.v6Cidr(POD_HOST)] },
    ]);
    const containerId = `${PREFIX}-ipvlan`;

    const how = { containerId, netns: pod.netns.path, files, node: node.netns.name };
    const add = await announcerAdd(scope(), { mainConf, prevResult, ...how });
    const frames = await capture.stop();

    expect(add.code, add.stdout).toBe(0);
    expect(add.json).toEqual(prevResult);
    expect(frames.filter((f) => isGarp(f) || isNa(f))).toEqual([]);
    const l3 = 'ipvlan in L3 mode has no L2 neighbours to update: sending nothing';
    expect(await files.logged('info', l3, { containerId })).toHaveLength(1);
    expect(await announcerLeftovers(files)).toEqual([]);
  });

  it('ipv6: false on dual stack: only ARP is sent, and the IPv6 entry stays stale', async () => {
    const added = await addOnCapturedBridgePod('noipv6', { ipv6: false, count: 1 });
    const { files, ip4, ip6, bridge, mac: podMac, capture, add } = added;
    const entry4 = await neighEntry(bridge, ip4);
    const entry6 = await neighEntry(bridge, ip6);
    const frames = (await capture.stop()).filter((f) => f.eth.src === podMac);

    expect(add.code, add.stdout).toBe(0);
    expect(frames.filter((f) => isNa(f))).toEqual([]);
    expect(frames.filter(isGarp).map((f) => f.arp!.senderIp)).toEqual([ip4]);
    expect(entry4?.mac).toBe(podMac);
    expect(entry6).toMatchObject({ state: 'STALE', mac: OLD_MAC });
    expect(await announcerLeftovers(files)).toEqual([]);
  });
});
