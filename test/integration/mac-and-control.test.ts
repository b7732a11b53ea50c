// IP-derived MACs and per-attachment control (issue 4), against the real
// bridge plugin and stand-in pods: the derived MAC is set, reported, learnt by
// the node and verified by CHECK; DEL puts the original back; a MAC the runtime
// asked for is never replaced; bad prefixes are refused; and an attachment that
// opted out (args.cni.announce, CNI_ARGS ANNOUNCE) sends nothing at all.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { isIPv4 } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import {
  addBridgePod,
  allocSubnet,
  ANNOUNCER,
  announcerFiles,
  assertCniOk,
  canonicalIp,
  chainConfig,
  cniExec,
  createBridge,
  createNetns,
  createStandInPod,
  deleteNetns,
  hostVeth,
  killStrays,
  linkShow,
  listLinks,
  listNetns,
  neighEntry,
  ownAnnouncerProcesses,
  plantStale,
  podInterface,
  readLog,
  runOk,
  RUN_TAG,
  scopePerTest,
  setSysctl,
  skipIntegration,
  startCapture,
  stateFiles,
  waitFor,
  type CniCall,
  type CniOutput,
  type Frame,
  type Scope,
  type Subnet,
} from './harness';

/** Every netns and link this file creates starts with this. */
const PREFIX = `m${RUN_TAG}`;
const NETWORK = 'macnet';
const CNI_VERSION = '1.0.0';
const MAIN_CONF = { name: NETWORK, cniVersion: CNI_VERSION };
const OLD_MAC = '86:03:17:7a:eb:6e';
/** What a Kubernetes runtime puts in CNI_ARGS before any key of ours. */
const K8S_ARGS = 'IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p';
/** A burst whose tail would send rounds 2 and 3 at +300 and +600 ms, well inside the capture window. */
const BURST = { count: 3, intervalMs: 300 };
/** How long a capture keeps running after ADD exits: past every round the tail would have sent. */
const TAIL_WINDOW_MS = 1500;

/** The IP-derived MAC as ovn-kubernetes builds it: prefix + IPv4 bytes, or prefix + sha256(canonical IPv6 text)[0..4]. */
function derivedMac(address: string, prefix = '0a:58'): string {
  const tail = isIPv4(address)
    ? Uint8Array.from(address.split('.').map(Number))
    : createHash('sha256').update(canonicalIp(address), 'ascii').digest().subarray(0, 4);
  return [prefix, ...Array.from(tail, (b) => b.toString(16).padStart(2, '0'))].join(':');
}

async function leftovers(): Promise<string[]> {
  const netns = (await listNetns()).filter((n) => n.startsWith(PREFIX));
  const links = (await listLinks()).map((l) => l.ifname).filter((n) => n.startsWith(PREFIX));
  return [...netns.map((n) => `netns ${n}`), ...links.map((l) => `link ${l}`)];
}

/** The end state of every test: no announcer process of ours alive and no record in stateDir. */
async function expectNothingLeft(stateDir: string): Promise<void> {
  await waitFor(async () => (await ownAnnouncerProcesses()).length === 0, {
    timeoutMs: 5000,
    what: 'no announcer process of this test run',
  }).catch(async () => expect(await ownAnnouncerProcesses()).toEqual([]));
  expect(await stateFiles(stateDir)).toEqual([]);
}

/** The bridge port state of a host veth (`forwarding`, `disabled`…). */
async function portState(dev: string): Promise<string | undefined> {
  const { stdout } = await runOk('bridge', ['-j', 'link', 'show', 'dev', dev]);
  return (JSON.parse(stdout) as { state?: string }[])[0]?.state;
}

/** ARP frames and NAs (ICMPv6 136) sent with one of these source MACs. */
function announcementsFrom(frames: readonly Frame[], macs: readonly string[]): Frame[] {
  return frames.filter((f) => macs.includes(f.eth.src) && (f.arp !== undefined || f.icmpv6?.type === 136));
}

function describeFrames(frames: readonly Frame[]): string {
  return frames
    .map((f) => `${f.eth.src} > ${f.eth.dst} ${f.arp ? `arp op ${f.arp.opcode} ${f.arp.senderIp}` : `icmpv6 ${f.icmpv6?.type} ${f.icmpv6?.target ?? ''}`}`)
    .join('; ');
}

/** One announcer attachment: its CNI call env and config, DEL registered at scope close. */
interface Attachment {
  call: Omit<CniCall, 'command'>;
  conf: Record<string, unknown>;
  stateDir: string;
  logFile: string;
  recordFile: string;
  run(command: 'ADD' | 'CHECK' | 'DEL', over?: { conf?: Record<string, unknown>; call?: Partial<CniCall> }): Promise<CniOutput>;
}

/**
 * Builds an attachment of the announcer chained after prevResult, and registers
 * its DEL at scope close so that a failing test still stops the tail and
 * restores the MAC before the pod and the bridge go away.
 */
function attachment(
  scope: Scope,
  files: { stateDir: string; logFile: string },
  opts: { containerId: string; netns: string; args?: string; announcer: Record<string, unknown>; prevResult: unknown },
): Attachment {
  const call: Omit<CniCall, 'command'> = { containerId: opts.containerId, netns: opts.netns, ifname: 'eth0' };
  if (opts.args !== undefined) call.args = opts.args;
  const conf = chainConfig(
    MAIN_CONF,
    { type: 'announcer', stateDir: files.stateDir, logFile: files.logFile, logLevel: 'debug', ...opts.announcer },
    opts.prevResult,
  );
  const att: Attachment = {
    call,
    conf,
    ...files,
    recordFile: join(files.stateDir, `${opts.containerId}@eth0.json`),
    run: (command, over = {}) => cniExec(ANNOUNCER, { ...call, ...over.call, command }, { ...conf, ...over.conf }),
  };
  // The cleanup DEL carries only what finds the record: a test's own config or CNI_ARGS may be
  // deliberately invalid, and DEL must still run.
  const cleanupConf = chainConfig(MAIN_CONF, { type: 'announcer', ...files }, opts.prevResult);
  scope.defer(async () => {
    const { args: _args, ...cleanupCall } = call;
    assertCniOk(`announcer DEL ${opts.containerId}`, await cniExec(ANNOUNCER, { ...cleanupCall, command: 'DEL' }, cleanupConf));
  }, `announcer DEL ${opts.containerId}`);
  return att;
}

/** A pod on a fresh bridge through the real bridge plugin, settled: pod link up, its port forwarding. */
interface BridgePod {
  net: Subnet;
  bridge: string;
  netns: { name: string; path: string };
  containerId: string;
  /** The pod's IPv4 address (no prefix length). */
  ip: string;
  /** The bridge plugin's result. */
  result: any;
  /** The MAC the bridge plugin gave eth0. */
  mac: string;
}

async function bridgePod(scope: Scope, tag: string, extra?: Record<string, unknown>): Promise<BridgePod> {
  const net = allocSubnet();
  const bridge = await createBridge(scope, { v4Cidr: net.v4Cidr(1), prefix: PREFIX });
  const netns = await createNetns(scope, PREFIX);
  const containerId = `${PREFIX}-${tag}`;
  const result = await addBridgePod(scope, {
    bridge,
    netns: netns.path,
    ip: net.v4Cidr(5),
    gw: net.v4(1),
    containerId,
    name: NETWORK,
    cniVersion: CNI_VERSION,
    ...(extra === undefined ? {} : { extra }),
  });
  const pod = podInterface(result);
  const host = hostVeth(result, bridge);
  if (!pod || !host) throw new Error(`bridge result without pod or host interface: ${JSON.stringify(result)}`);
  await waitFor(async () => (await linkShow('eth0', netns.name))?.operstate === 'UP', { what: 'pod eth0 up' });
  await waitFor(async () => (await portState(host.name)) === 'forwarding', { what: `port ${host.name} forwarding` });
  return { net, bridge, netns, containerId, ip: net.v4(5), result, mac: pod.mac };
}

async function podMac(netns: string): Promise<string | undefined> {
  return (await linkShow('eth0', netns))?.mac;
}

/** bridgeResult with the pod interface's MAC replaced: what ADD should print after setting a derived MAC. */
function withPodMac(result: any, mac: string): any {
  const expected = structuredClone(result);
  podInterface(expected)!.mac = mac;
  return expected;
}

describe.skipIf(skipIntegration())('IP-derived MACs and per-attachment control', () => {
  const scope = scopePerTest();

  afterAll(async () => {
    await waitFor(async () => (await leftovers()).length === 0, { what: `no netns or link named ${PREFIX}*` }).catch(
      async () => expect(await leftovers()).toEqual([]),
    );
  });

  it('the derivation helper of this file matches the field-notes vectors', () => {
    expect(derivedMac('10.88.0.5')).toBe('0a:58:0a:58:00:05');
    expect(derivedMac('fd00::5')).toBe('0a:58:67:cc:13:6b');
    expect(derivedMac('fd00:0:0::0005')).toBe('0a:58:67:cc:13:6b');
  });

  describe('chained after the real bridge plugin with mac: ip-derived', () => {
    it('sets the derived MAC, reports it, the node learns it, and CHECK verifies it', async () => {
      killStrays(scope(), { strict: true });
      const files = await announcerFiles(scope());
      const pod = await bridgePod(scope(), 'derive');
      const derived = derivedMac(pod.ip);
      expect(pod.mac).not.toBe(derived);
      const att = attachment(scope(), files, {
        containerId: pod.containerId,
        netns: pod.netns.path,
        announcer: { mac: 'ip-derived', ...BURST },
        prevResult: pod.result,
      });

      // With the bridge plugin's arp_notify=1 the kernel would send its own GARP on the MAC change;
      // turned off, only the announcer's frames can repair the node's entry.
      await setSysctl('net.ipv4.conf.eth0.arp_notify', 0, pod.netns.name);
      await plantStale(pod.bridge, pod.ip, OLD_MAC);
      const add = assertCniOk('announcer ADD', await att.run('ADD'));
      // When ADD returns, the node's entry already holds the derived MAC.
      expect((await neighEntry(pod.bridge, pod.ip))?.mac).toBe(derived);
      expect(await podMac(pod.netns.name)).toBe(derived);
      // The pod entry reports it; host-side entries, ips and the rest are untouched.
      expect(add.json).toEqual(withPodMac(pod.result, derived));

      const checkConf = { prevResult: add.json };
      const check = await att.run('CHECK', { conf: checkConf });
      expect(check).toMatchObject({ code: 0, stdout: '' });

      // The MAC changed behind the announcer's back: CHECK fails with 103, showing both MACs.
      const intruder = '02:11:22:33:44:55';
      await runOk('ip', ['-n', pod.netns.name, 'link', 'set', 'eth0', 'address', intruder]);
      const bad = await att.run('CHECK', { conf: checkConf });
      expect(bad.code).toBe(1);
      expect(bad.json).toMatchObject({ cniVersion: CNI_VERSION, code: 103 });
      expect(bad.json.msg).toContain(intruder);
      expect(bad.json.msg).toContain(derived);

      // DEL puts back the MAC the bridge plugin gave, stops the tail and forgets the attachment.
      assertCniOk('announcer DEL', await att.run('DEL'));
      expect(await podMac(pod.netns.name)).toBe(pod.mac);
      await expectNothingLeft(files.stateDir);
    });
  });

  describe('IPv6-only stand-in pod with a hand-written prevResult', () => {
    it.each<{ prefix: string | undefined; shown: string }>([
      { prefix: undefined, shown: '0a:58 (default)' },
      { prefix: '02:42', shown: '02:42' },
    ])('derives prefix + sha256(canonical text)[0..4] with macPrefix $shown', async ({ prefix }) => {
      killStrays(scope(), { strict: true });
      const files = await announcerFiles(scope());
      const net = allocSubnet();
      const standIn = await createStandInPod(scope(), { prefix: PREFIX, v6: [net.v6Cidr(5)] });
      const address = net.v6(5);
      const derived = derivedMac(address, prefix ?? '0a:58');
      const prevResult = {
        cniVersion: CNI_VERSION,
        interfaces: [{ name: 'eth0', mac: standIn.mac, sandbox: standIn.netns.path }],
        ips: [{ address: net.v6Cidr(5), interface: 0 }],
      };
      const att = attachment(scope(), files, {
        containerId: `${PREFIX}-v6`,
        netns: standIn.netns.path,
        announcer: { mac: 'ip-derived', count: 1, ...(prefix === undefined ? {} : { macPrefix: prefix }) },
        prevResult,
      });

      const capture = await startCapture(scope(), { netns: standIn.netns.name, iface: standIn.peer, filter: 'icmp6' });
      const add = assertCniOk('announcer ADD', await att.run('ADD'));
      const frames = await capture.stop();

      expect(await podMac(standIn.netns.name)).toBe(derived);
      expect(add.json).toEqual({ ...prevResult, interfaces: [{ ...prevResult.interfaces[0], mac: derived }] });
      // The NA already carries the derived MAC, as source and as target link-layer address.
      const nas = frames.filter((f) => f.icmpv6?.type === 136 && f.icmpv6.target === address);
      expect(nas, describeFrames(frames)).toHaveLength(1);
      expect(nas[0]).toMatchObject({ eth: { src: derived }, icmpv6: { linkAddr: derived }, malformed: false });
      expect(await att.run('CHECK', { conf: { prevResult: add.json } })).toMatchObject({ code: 0, stdout: '' });

      assertCniOk('announcer DEL', await att.run('DEL'));
      expect(await podMac(standIn.netns.name)).toBe(standIn.mac);
      await expectNothingLeft(files.stateDir);
    });
  });

  it.each<{ first: 4 | 6 }>([{ first: 6 }, { first: 4 }])(
    'on a dual-stack interface the first prevResult address decides (IPv$first listed first)',
    async ({ first }) => {
      killStrays(scope(), { strict: true });
      const files = await announcerFiles(scope());
      const net = allocSubnet();
      const standIn = await createStandInPod(scope(), { prefix: PREFIX, v4: [net.v4Cidr(6)], v6: [net.v6Cidr(6)] });
      const ips = [{ address: net.v4Cidr(6), interface: 0 }, { address: net.v6Cidr(6), interface: 0 }];
      if (first === 6) ips.reverse();
      const prevResult = {
        cniVersion: CNI_VERSION,
        interfaces: [{ name: 'eth0', mac: standIn.mac, sandbox: standIn.netns.path }],
        ips,
      };
      const att = attachment(scope(), files, {
        containerId: `${PREFIX}-dual`,
        netns: standIn.netns.path,
        announcer: { mac: 'ip-derived', count: 1 },
        prevResult,
      });
      const add = assertCniOk('announcer ADD', await att.run('ADD'));
      const derived = derivedMac(first === 6 ? net.v6(6) : net.v4(6));
      expect(await podMac(standIn.netns.name)).toBe(derived);
      expect(add.json.interfaces[0].mac).toBe(derived);
      assertCniOk('announcer DEL', await att.run('DEL'));
      expect(await podMac(standIn.netns.name)).toBe(standIn.mac);
      await expectNothingLeft(files.stateDir);
    },
  );

  describe('restore on DEL (a stand-in pod interface playing a host-device NIC)', () => {
    const NIC_MAC = '02:00:5e:c0:ff:ee';

    async function nicPod(tag: string) {
      const files = await announcerFiles(scope());
      const net = allocSubnet();
      const standIn = await createStandInPod(scope(), { prefix: PREFIX, mac: NIC_MAC, v4: [net.v4Cidr(7)] });
      expect(standIn.mac).toBe(NIC_MAC);
      // host-device's result: the NIC, moved into the pod, keeps its own MAC.
      const prevResult = {
        cniVersion: CNI_VERSION,
        interfaces: [{ name: 'eth0', mac: NIC_MAC, sandbox: standIn.netns.path }],
        ips: [{ address: net.v4Cidr(7), interface: 0 }],
      };
      const att = attachment(scope(), files, {
        containerId: `${PREFIX}-${tag}`,
        netns: standIn.netns.path,
        announcer: { mac: 'ip-derived', count: 1 },
        prevResult,
      });
      return { files, standIn, att, derived: derivedMac(net.v4(7)) };
    }

    it('records the original MAC (0600) and restores it on DEL; a second DEL is fine; DEL without CNI_NETNS uses the record', async () => {
      killStrays(scope(), { strict: true });
      const { files, standIn, att, derived } = await nicPod('nic');
      const ns = standIn.netns.name;

      assertCniOk('announcer ADD', await att.run('ADD'));
      expect(await podMac(ns)).toBe(derived);
      const mode = (await stat(att.recordFile)).mode & 0o777;
      expect(mode.toString(8)).toBe('600');
      const record = JSON.parse(await readFile(att.recordFile, 'utf8'));
      expect(record).toMatchObject({
        network: NETWORK,
        containerId: att.call.containerId,
        ifname: 'eth0',
        netns: standIn.netns.path,
        originalMacs: [{ name: 'eth0', mac: NIC_MAC }],
      });
      expect((await stateFiles(files.stateDir)).sort()).toEqual([`${att.call.containerId}@eth0.json`, `${att.call.containerId}@eth0.lock`]);

      // A repeated ADD finds the derived MAC already set: the NIC's own MAC stays the one recorded.
      assertCniOk('announcer ADD repeated', await att.run('ADD'));
      expect(JSON.parse(await readFile(att.recordFile, 'utf8'))).toMatchObject({ originalMacs: [{ name: 'eth0', mac: NIC_MAC }] });

      const del = await att.run('DEL');
      expect(del).toMatchObject({ code: 0, stdout: '' });
      expect(await podMac(ns)).toBe(NIC_MAC);
      expect(await stateFiles(files.stateDir)).toEqual([]);
      expect(await att.run('DEL')).toMatchObject({ code: 0, stdout: '' });
      expect(await podMac(ns)).toBe(NIC_MAC);

      // Without CNI_NETNS (allowed on DEL), the record's netns is where the MAC goes back.
      assertCniOk('announcer ADD again', await att.run('ADD'));
      expect(await podMac(ns)).toBe(derived);
      expect(await att.run('DEL', { call: { netns: undefined } })).toMatchObject({ code: 0, stdout: '' });
      expect(await podMac(ns)).toBe(NIC_MAC);
      await expectNothingLeft(files.stateDir);
    });

    it('DEL after the netns is gone exits 0 and removes the record', async () => {
      killStrays(scope(), { strict: true });
      const { files, standIn, att, derived } = await nicPod('gone');
      assertCniOk('announcer ADD', await att.run('ADD'));
      expect(await podMac(standIn.netns.name)).toBe(derived);
      expect((await stateFiles(files.stateDir)).sort()).toEqual([`${att.call.containerId}@eth0.json`, `${att.call.containerId}@eth0.lock`]);

      await deleteNetns(standIn.netns.name);
      expect(await att.run('DEL')).toMatchObject({ code: 0, stdout: '' });
      expect(await stateFiles(files.stateDir)).toEqual([]);
      expect(await att.run('DEL', { call: { netns: undefined } })).toMatchObject({ code: 0, stdout: '' });
      await expectNothingLeft(files.stateDir);
    });
  });

  it('never overwrites a MAC the runtime requested (runtimeConfig.mac)', async () => {
    killStrays(scope(), { strict: true });
    const files = await announcerFiles(scope());
    const runtimeMac = '02:c0:ff:ee:00:05';
    // The runtime hands the same runtimeConfig to every plugin that declares the capability; the bridge plugin sets it.
    const pod = await bridgePod(scope(), 'rtmac', { capabilities: { mac: true }, runtimeConfig: { mac: runtimeMac } });
    expect(pod.mac).toBe(runtimeMac);
    const att = attachment(scope(), files, {
      containerId: pod.containerId,
      netns: pod.netns.path,
      announcer: { mac: 'ip-derived', capabilities: { mac: true }, runtimeConfig: { mac: runtimeMac }, count: 1 },
      prevResult: pod.result,
    });

    const capture = await startCapture(scope(), { iface: pod.bridge, filter: 'arp' });
    const add = assertCniOk('announcer ADD', await att.run('ADD'));
    const frames = await capture.stop();

    expect(await podMac(pod.netns.name)).toBe(runtimeMac);
    expect(add.json).toEqual(pod.result);
    // It still announces, with the runtime's MAC.
    const garps = frames.filter((f) => f.arp?.isGratuitous && f.arp.senderIp === pod.ip);
    expect(garps.length, describeFrames(frames)).toBeGreaterThanOrEqual(1);
    expect(garps.every((f) => f.eth.src === runtimeMac && f.arp!.senderMac === runtimeMac)).toBe(true);
    // Nothing replaced, no tail (count 1): no record. CHECK does not compare MACs here.
    expect(await stateFiles(files.stateDir)).toEqual([]);
    expect(await att.run('CHECK', { conf: { prevResult: add.json } })).toMatchObject({ code: 0, stdout: '' });

    assertCniOk('announcer DEL', await att.run('DEL'));
    expect(await podMac(pod.netns.name)).toBe(runtimeMac);
    await expectNothingLeft(files.stateDir);
  });

  describe('macPrefix validation', () => {
    async function v4StandIn() {
      const files = await announcerFiles(scope());
      const net = allocSubnet();
      const standIn = await createStandInPod(scope(), { prefix: PREFIX, v4: [net.v4Cidr(7)] });
      const prevResult = {
        cniVersion: CNI_VERSION,
        interfaces: [{ name: 'eth0', mac: standIn.mac, sandbox: standIn.netns.path }],
        ips: [{ address: net.v4Cidr(7), interface: 0 }],
      };
      return { files, net, standIn, prevResult };
    }

    it.each([
      { where: 'config', prefix: '01:00', field: '"macPrefix"' },
      { where: 'config', prefix: '0a:5', field: '"macPrefix"' },
      { where: 'args.cni.announce', prefix: '03:00', field: '"args.cni.announce.macPrefix"' },
    ])('refuses $prefix in $where with code 7 naming $field, and touches nothing', async ({ where, prefix, field }) => {
      killStrays(scope(), { strict: true });
      const { files, standIn, prevResult } = await v4StandIn();
      const announcer =
        where === 'config'
          ? { mac: 'ip-derived', macPrefix: prefix }
          : { mac: 'ip-derived', podOverrides: ['macPrefix'], args: { cni: { announce: { macPrefix: prefix } } } };
      const att = attachment(scope(), files, {
        containerId: `${PREFIX}-pfx`,
        netns: standIn.netns.path,
        announcer: { ...announcer, count: 1 },
        prevResult,
      });

      const add = await att.run('ADD');
      expect(add.code).toBe(1);
      expect(add.json).toMatchObject({ cniVersion: CNI_VERSION, code: 7 });
      expect(add.json.msg).toContain(field);
      expect(add.json.msg).toContain(prefix);
      expect(await podMac(standIn.netns.name)).toBe(standIn.mac);
      await expectNothingLeft(files.stateDir);
    });

    it('accepts a prefix without the locally-administered bit, with a warning in the log', async () => {
      killStrays(scope(), { strict: true });
      const { files, net, standIn, prevResult } = await v4StandIn();
      const att = attachment(scope(), files, {
        containerId: `${PREFIX}-glob`,
        netns: standIn.netns.path,
        announcer: { mac: 'ip-derived', macPrefix: '00:16', count: 1 },
        prevResult,
      });
      assertCniOk('announcer ADD', await att.run('ADD'));
      expect(await podMac(standIn.netns.name)).toBe(derivedMac(net.v4(7), '00:16'));
      expect(await readLog(files.logFile)).toMatch(/ WARN .*macPrefix=00:16/);
      assertCniOk('announcer DEL', await att.run('DEL'));
      expect(await podMac(standIn.netns.name)).toBe(standIn.mac);
      await expectNothingLeft(files.stateDir);
    });
  });

  describe('per-attachment control: opt-out and precedence', () => {
    /**
     * ADDs the announcer to a settled bridge pod while capturing on the bridge
     * (from before ADD until TAIL_WINDOW_MS after it), so only the announcer's
     * frames can be in it: the kernel's own link-up noise is over by then.
     */
    async function addUnderCapture(
      tag: string,
      opts: { announcer: Record<string, unknown>; args?: string; silenceKernel?: boolean },
    ) {
      killStrays(scope(), { strict: true });
      const files = await announcerFiles(scope());
      const pod = await bridgePod(scope(), tag);
      if (opts.silenceKernel) {
        // The bridge plugin sets arp_notify=1, so the kernel itself sends a GARP when the MAC changes
        // (README, live-migration targets): a target that must stay silent turns it off.
        await setSysctl('net.ipv4.conf.eth0.arp_notify', 0, pod.netns.name);
      }
      const att = attachment(scope(), files, {
        containerId: pod.containerId,
        netns: pod.netns.path,
        ...(opts.args === undefined ? {} : { args: opts.args }),
        announcer: { ...BURST, ...opts.announcer },
        prevResult: pod.result,
      });
      const capture = await startCapture(scope(), { iface: pod.bridge, filter: 'arp or icmp6' });
      const add = await att.run('ADD');
      await sleep(TAIL_WINDOW_MS);
      const frames = await capture.stop();
      return { files, pod, att, add, frames };
    }

    it.each<{ how: string; announcer: Record<string, unknown>; args?: string }>([
      { how: 'args.cni.announce: false', announcer: { args: { cni: { announce: false } } } },
      { how: 'CNI_ARGS ANNOUNCE=false', announcer: {}, args: `${K8S_ARGS};ANNOUNCE=false` },
      {
        how: 'ANNOUNCE=false with an override object that does not name enabled',
        announcer: { args: { cni: { announce: { count: 1 } } } },
        args: `${K8S_ARGS};ANNOUNCE=false`,
      },
      {
        how: 'args.cni.announce {enabled: false, mac: keep} over config mac: ip-derived',
        announcer: { mac: 'ip-derived', args: { cni: { announce: { enabled: false, mac: 'keep' } } } },
      },
    ])('$how: zero ARP/NA frames, MAC kept, result passed through', async ({ how, announcer, args }) => {
      const { files, pod, att, add, frames } = await addUnderCapture('off', { announcer, ...(args ? { args } : {}) });
      assertCniOk(`announcer ADD (${how})`, add);
      const sent = announcementsFrom(frames, [pod.mac, derivedMac(pod.ip)]);
      expect(sent, describeFrames(sent)).toEqual([]);
      expect(add.json).toEqual(pod.result);
      expect(await podMac(pod.netns.name)).toBe(pod.mac);
      // Nothing to restore and no tail: no record, no process, even before DEL.
      await expectNothingLeft(files.stateDir);
      assertCniOk('announcer DEL', await att.run('DEL'));
      await expectNothingLeft(files.stateDir);
    });

    it('args.cni.announce: false with config mac: ip-derived still sets the MAC, and sends no ARP/NA', async () => {
      const { files, pod, att, add, frames } = await addUnderCapture('offmac', {
        announcer: { mac: 'ip-derived', args: { cni: { announce: false } } },
        silenceKernel: true,
      });
      assertCniOk('announcer ADD', add);
      const derived = derivedMac(pod.ip);
      const sent = announcementsFrom(frames, [pod.mac, derived]);
      expect(sent, describeFrames(sent)).toEqual([]);
      expect(await podMac(pod.netns.name)).toBe(derived);
      expect(add.json).toEqual(withPodMac(pod.result, derived));
      expect(JSON.parse(await readFile(att.recordFile, 'utf8'))).toMatchObject({ originalMacs: [{ name: 'eth0', mac: pod.mac }] });
      expect(await ownAnnouncerProcesses()).toEqual([]);

      assertCniOk('announcer DEL', await att.run('DEL'));
      expect(await podMac(pod.netns.name)).toBe(pod.mac);
      await expectNothingLeft(files.stateDir);
    });

    it('CNI_ARGS ANNOUNCE=bogus is code 4, and nothing is done', async () => {
      killStrays(scope(), { strict: true });
      const files = await announcerFiles(scope());
      const pod = await bridgePod(scope(), 'bogus');
      const att = attachment(scope(), files, {
        containerId: pod.containerId,
        netns: pod.netns.path,
        args: `${K8S_ARGS};ANNOUNCE=bogus`,
        announcer: { mac: 'ip-derived', ...BURST },
        prevResult: pod.result,
      });
      const add = await att.run('ADD');
      expect(add.code).toBe(1);
      // Env is read before stdin, so the error cannot carry the config's version (README: 1.1.0 then).
      expect(add.json).toMatchObject({ code: 4 });
      expect(add.json.msg).toContain('ANNOUNCE');
      expect(add.json.msg).toContain('bogus');
      expect(await podMac(pod.netns.name)).toBe(pod.mac);
      await expectNothingLeft(files.stateDir);
      // DEL reads CNI_ARGS too and refuses the same value; the scope's DEL (no CNI_ARGS) cleans up.
      expect((await att.run('DEL')).json).toMatchObject({ code: 4 });
    });

    it.each<{ how: string; announce: unknown }>([
      { how: 'args.cni.announce: true', announce: true },
      { how: 'args.cni.announce: {enabled: true}', announce: { enabled: true } },
    ])('ANNOUNCE=false is not undone by $how (off wins): zero ARP/NA frames', async ({ announce }) => {
      const { files, pod, att, add, frames } = await addUnderCapture('on', {
        announcer: { args: { cni: { announce } } },
        args: `${K8S_ARGS};ANNOUNCE=false`,
      });
      assertCniOk('announcer ADD', add);
      expect(add.json).toEqual(pod.result);
      const sent = announcementsFrom(frames, [pod.mac]);
      expect(sent, describeFrames(sent)).toEqual([]);
      await expectNothingLeft(files.stateDir);

      assertCniOk('announcer DEL', await att.run('DEL'));
      await expectNothingLeft(files.stateDir);
    });
  });
});
