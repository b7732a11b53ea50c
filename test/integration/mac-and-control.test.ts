// IP-derived MACs and per-attachment control, against the real bridge plugin
// and stand-in pods: the derived MAC is set, reported, learnt by the node and
// verified by CHECK; DEL puts the original back; a MAC the runtime asked for is
// never replaced; bad prefixes are refused; and an attachment that opted out
// (args.cni.announce, CNI_ARGS ANNOUNCE) sends nothing at all.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  OLD_MAC,
  allocSubnet,
  announcementsFrom,
  announcerAdd,
  announcerDel,
  announcerLeftovers,
  announcerRun,
  assertCniOk,
  createBridgePod,
  createStandInPod,
  deleteNetns,
  derivedMac,
  describeFrames,
  linkShow,
  neighEntry,
  ownAnnouncerProcesses,
  plantStale,
  podInterface,
  podPrevResult,
  runOk,
  RUN_TAG,
  scopePerTest,
  setSysctl,
  skipIntegration,
  startCapture,
  stateFiles,
  type AnnouncerAttachment,
  type AnnouncerFiles,
  type Subnet,
} from './harness';
import { cleanStart } from './harness/executor-steps';

/** Every netns and link this file creates starts with this. */
const PREFIX = `m${RUN_TAG}`;
const NETWORK = 'macnet';
const CNI_VERSION = '1.0.0';
/** What a Kubernetes runtime puts in CNI_ARGS before any key of ours. */
const K8S_ARGS = 'IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p';
/** A burst whose later rounds would go out at +300 and +600 ms, well inside the capture window. */
const BURST = { count: 3, intervalMs: 300 };
/** How long a capture keeps running after ADD exits: past every round the background would have sent. */
const TAIL_WINDOW_MS = 1500;

/** The announcer on a pod's eth0 at `netns`, chained in network NETWORK with a debug log. */
function attachment(
  files: AnnouncerFiles,
  containerId: string,
  netns: string,
  prevResult: unknown,
  options: Record<string, unknown>,
  args?: string,
): AnnouncerAttachment {
  const mainConf = { name: NETWORK, cniVersion: CNI_VERSION };
  return { mainConf, files, containerId, netns, prevResult, options: { logLevel: 'debug', ...options }, args };
}

/** The state record of an attachment on eth0. */
function recordFile(files: AnnouncerFiles, containerId: string): string {
  return join(files.stateDir, `${containerId}@eth0.json`);
}

async function podMac(netns: string): Promise<string | undefined> {
  return (await linkShow('eth0', netns))?.mac;
}

/** DEL succeeds, the pod's eth0 has `mac` again, and the announcer left nothing. */
async function delRestores(att: AnnouncerAttachment, ns: string, mac: string): Promise<void> {
  assertCniOk('announcer DEL', await announcerDel(att));
  expect(await podMac(ns)).toBe(mac);
  expect(await announcerLeftovers(att.files)).toEqual([]);
}

/** The result with the pod interface's MAC replaced: what ADD prints after setting a derived MAC. */
function withPodMac(result: any, mac: string): any {
  const expected = structuredClone(result);
  podInterface(expected)!.mac = mac;
  return expected;
}

describe.skipIf(skipIntegration())('IP-derived MACs and per-attachment control', () => {
  const scope = scopePerTest(PREFIX);

  /** A pod on a bridge of its own through the real bridge plugin, settled: eth0 up, its port forwarding. */
  function bridgePod(tag: string, extra?: Record<string, unknown>) {
    return createBridgePod(scope(), {
      prefix: PREFIX,
      containerId: `${PREFIX}-${tag}`,
      name: NETWORK,
      cniVersion: CNI_VERSION,
      ...(extra === undefined ? {} : { extra }),
      settle: true,
    });
  }

  /** A stand-in pod on a fresh subnet with `cidrs(net)` on its eth0, and a prevResult listing them in that order. */
  async function standIn(cidrs: (net: Subnet) => string[], mac?: string) {
    const net = allocSubnet();
    const addresses = cidrs(net);
    const pod = await createStandInPod(scope(), {
      prefix: PREFIX,
      v4: addresses.filter((a) => !a.includes(':')),
      v6: addresses.filter((a) => a.includes(':')),
      ...(mac === undefined ? {} : { mac }),
    });
    return { net, pod, prevResult: podPrevResult(pod.netns.path, [{ name: 'eth0', mac: pod.mac, addresses }]) };
  }

  it("the harness's derivedMac: 10.88.0.5 as the README derives it, fd00::5 in any spelling", () => {
    expect(derivedMac('10.88.0.5')).toBe('0a:58:0a:58:00:05');
    expect(derivedMac('fd00::5')).toBe('0a:58:67:cc:13:6b');
    expect(derivedMac('fd00:0:0::0005')).toBe('0a:58:67:cc:13:6b');
  });

  describe('chained after the real bridge plugin with mac: ip-derived', () => {
    it('sets the derived MAC, reports it, the node learns it, and CHECK verifies it', async () => {
      const { files } = await cleanStart(scope);
      const pod = await bridgePod('derive');
      const derived = derivedMac(pod.ip);
      expect(pod.mac).not.toBe(derived);
      const att = attachment(files, pod.containerId, pod.netns.path, pod.result, { mac: 'ip-derived', ...BURST });

      // With the bridge plugin's arp_notify=1 the kernel would send its own GARP on the MAC change;
      // turned off, only the announcer's frames can repair the node's entry.
      await setSysctl('net.ipv4.conf.eth0.arp_notify', 0, pod.netns.name);
      await plantStale(pod.bridge, pod.ip, OLD_MAC);
      const add = assertCniOk('announcer ADD', await announcerAdd(scope(), att));
      // When ADD returns, the node's entry already holds the derived MAC.
      expect((await neighEntry(pod.bridge, pod.ip))?.mac).toBe(derived);
      expect(await podMac(pod.netns.name)).toBe(derived);
      // The pod entry reports it; host-side entries, ips and the rest are untouched.
      expect(add.json).toEqual(withPodMac(pod.result, derived));

      const checked = { ...att, prevResult: add.json };
      expect(await announcerRun(checked, 'CHECK')).toMatchObject({ code: 0, stdout: '' });

      // The MAC changed behind the announcer's back: CHECK fails with 103, showing both MACs.
      const intruder = '02:11:22:33:44:55';
      await runOk('ip', ['-n', pod.netns.name, 'link', 'set', 'eth0', 'address', intruder]);
      const bad = await announcerRun(checked, 'CHECK');
      expect(bad.code).toBe(1);
      expect(bad.json).toMatchObject({ cniVersion: CNI_VERSION, code: 103 });
      expect(bad.json.msg).toContain(intruder);
      expect(bad.json.msg).toContain(derived);

      // DEL puts back the MAC the bridge plugin gave, stops the background rounds and forgets the attachment.
      await delRestores(att, pod.netns.name, pod.mac);
    });
  });

  describe('IPv6-only stand-in pod with a hand-written prevResult', () => {
    it.each<{ prefix: string | undefined; shown: string }>([
      { prefix: undefined, shown: '0a:58 (default)' },
      { prefix: '02:42', shown: '02:42' },
    ])('derives prefix + sha256(canonical text)[0..4] with macPrefix $shown', async ({ prefix }) => {
      const { files } = await cleanStart(scope);
      const { net, pod, prevResult } = await standIn((n) => [n.v6Cidr(5)]);
      const address = net.v6(5);
      const derived = derivedMac(address, prefix ?? '0a:58');
      const att = attachment(files, `${PREFIX}-v6`, pod.netns.path, prevResult, {
        mac: 'ip-derived',
        count: 1,
        ...(prefix === undefined ? {} : { macPrefix: prefix }),
      });

      const capture = await startCapture(scope(), { netns: pod.netns.name, iface: pod.peer, filter: 'icmp6' });
      const add = assertCniOk('announcer ADD', await announcerAdd(scope(), att));
      const frames = await capture.stop();

      expect(await podMac(pod.netns.name)).toBe(derived);
      expect(add.json).toEqual(withPodMac(prevResult, derived));
      // The NA already carries the derived MAC, as source and as target link-layer address.
      const nas = frames.filter((f) => f.icmpv6?.type === 136 && f.icmpv6.target === address);
      expect(nas, describeFrames(frames)).toHaveLength(1);
      expect(nas[0]).toMatchObject({ eth: { src: derived }, icmpv6: { linkAddr: derived }, malformed: false });
      expect(await announcerRun({ ...att, prevResult: add.json }, 'CHECK')).toMatchObject({ code: 0, stdout: '' });

      await delRestores(att, pod.netns.name, pod.mac);
    });
  });

  it.each<{ first: 4 | 6 }>([{ first: 6 }, { first: 4 }])(
    'on a dual-stack interface the first prevResult address decides (IPv$first listed first)',
    async ({ first }) => {
      const { files } = await cleanStart(scope);
      const { net, pod, prevResult } = await standIn((n) =>
        first === 6 ? [n.v6Cidr(6), n.v4Cidr(6)] : [n.v4Cidr(6), n.v6Cidr(6)],
      );
      const att = attachment(files, `${PREFIX}-dual`, pod.netns.path, prevResult, { mac: 'ip-derived', count: 1 });
      const add = assertCniOk('announcer ADD', await announcerAdd(scope(), att));
      const derived = derivedMac(first === 6 ? net.v6(6) : net.v4(6));
      expect(await podMac(pod.netns.name)).toBe(derived);
      expect(add.json.interfaces[0].mac).toBe(derived);
      await delRestores(att, pod.netns.name, pod.mac);
    },
  );

  describe('restore on DEL (a stand-in pod interface playing a host-device NIC)', () => {
    const NIC_MAC = '02:00:5e:c0:ff:ee';

    /** host-device's result: the NIC, moved into the pod, keeps its own MAC. */
    async function nicPod(tag: string) {
      const { files } = await cleanStart(scope);
      const { net, pod, prevResult } = await standIn((n) => [n.v4Cidr(7)], NIC_MAC);
      expect(pod.mac).toBe(NIC_MAC);
      const att = attachment(files, `${PREFIX}-${tag}`, pod.netns.path, prevResult, { mac: 'ip-derived', count: 1 });
      return { files, pod, att, derived: derivedMac(net.v4(7)) };
    }

    const recordsOriginalMACTitle =
      'records the original MAC (0600) and restores it on DEL; a second DEL is ' +
      'fine; DEL without CNI_NETNS uses the record';
    it(recordsOriginalMACTitle, async () => {
      const { files, pod, att, derived } = await nicPod('nic');
      const ns = pod.netns.name;
      const record = recordFile(files, att.containerId);

      assertCniOk('announcer ADD', await announcerAdd(scope(), att));
      expect(await podMac(ns)).toBe(derived);
      expect(((await stat(record)).mode & 0o777).toString(8)).toBe('600');
      expect(JSON.parse(await readFile(record, 'utf8'))).toMatchObject({
        network: NETWORK,
        containerId: att.containerId,
        ifname: 'eth0',
        netns: pod.netns.path,
        originalMacs: [{ name: 'eth0', mac: NIC_MAC }],
      });
      expect(await stateFiles(files.stateDir)).toEqual([`${att.containerId}@eth0.json`]);

      // A repeated ADD finds the derived MAC already set: the NIC's own MAC stays the one recorded.
      assertCniOk('announcer ADD repeated', await announcerAdd(scope(), att));
      expect(JSON.parse(await readFile(record, 'utf8'))).toMatchObject({
        originalMacs: [{ name: 'eth0', mac: NIC_MAC }],
      });

      expect(await announcerDel(att)).toMatchObject({ code: 0, stdout: '' });
      expect(await podMac(ns)).toBe(NIC_MAC);
      expect(await stateFiles(files.stateDir)).toEqual([]);
      expect(await announcerDel(att)).toMatchObject({ code: 0, stdout: '' });
      expect(await podMac(ns)).toBe(NIC_MAC);

      // Without CNI_NETNS (allowed on DEL), the record's netns is where the MAC goes back.
      assertCniOk('announcer ADD again', await announcerAdd(scope(), att));
      expect(await podMac(ns)).toBe(derived);
      expect(await announcerDel({ ...att, netns: undefined })).toMatchObject({ code: 0, stdout: '' });
      expect(await podMac(ns)).toBe(NIC_MAC);
      const restored = { containerId: att.containerId, macsRestored: 'eth0', recordRemoved: true };
      expect(await files.logged('info', 'DEL done', restored)).toHaveLength(2);
      expect(await announcerLeftovers(files)).toEqual([]);
    });

    it('DEL after the netns is gone exits 0 and removes the record', async () => {
      const { files, pod, att, derived } = await nicPod('gone');
      assertCniOk('announcer ADD', await announcerAdd(scope(), att));
      expect(await podMac(pod.netns.name)).toBe(derived);
      expect(await stateFiles(files.stateDir)).toEqual([`${att.containerId}@eth0.json`]);

      await deleteNetns(pod.netns.name);
      expect(await announcerDel(att)).toMatchObject({ code: 0, stdout: '' });
      expect(await stateFiles(files.stateDir)).toEqual([]);
      expect(await announcerDel({ ...att, netns: undefined })).toMatchObject({ code: 0, stdout: '' });
      expect(await announcerLeftovers(files)).toEqual([]);
    });
  });

  describe('macPrefix validation', () => {
    it.each([
      { where: 'config', prefix: '01:00', field: '"macPrefix"' },
      { where: 'config', prefix: '0a:5', field: '"macPrefix"' },
      { where: 'args.cni.announce', prefix: '03:00', field: '"args.cni.announce.macPrefix"' },
    ])('refuses $prefix in $where with code 7 naming $field, and touches nothing', async ({ where, prefix, field }) => {
      const { files } = await cleanStart(scope);
      const { pod, prevResult } = await standIn((n) => [n.v4Cidr(7)]);
      const options =
        where === 'config'
          ? { mac: 'ip-derived', macPrefix: prefix }
          : { mac: 'ip-derived', podOverrides: ['macPrefix'], args: { cni: { announce: { macPrefix: prefix } } } };
      const att = attachment(files, `${PREFIX}-pfx`, pod.netns.path, prevResult, { ...options, count: 1 });

      const add = await announcerAdd(scope(), att);
      expect(add.code).toBe(1);
      expect(add.json).toMatchObject({ cniVersion: CNI_VERSION, code: 7 });
      expect(add.json.msg).toContain(field);
      expect(add.json.msg).toContain(prefix);
      expect(await podMac(pod.netns.name)).toBe(pod.mac);
      expect(await announcerLeftovers(files)).toEqual([]);
    });

    it('accepts a prefix without the locally-administered bit, with a warning in the log', async () => {
      const { files } = await cleanStart(scope);
      const { net, pod, prevResult } = await standIn((n) => [n.v4Cidr(7)]);
      const att = attachment(files, `${PREFIX}-glob`, pod.netns.path, prevResult, {
        mac: 'ip-derived',
        macPrefix: '00:16',
        count: 1,
      });
      assertCniOk('announcer ADD', await announcerAdd(scope(), att));
      expect(await podMac(pod.netns.name)).toBe(derivedMac(net.v4(7), '00:16'));
      const warned = await files.logged('warn', /^macPrefix is not locally administered/, { macPrefix: '00:16' });
      expect(warned).toHaveLength(1);
      await delRestores(att, pod.netns.name, pod.mac);
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
      opts: { options: Record<string, unknown>; args?: string; silenceKernel?: boolean },
    ) {
      const { files } = await cleanStart(scope);
      const pod = await bridgePod(tag);
      if (opts.silenceKernel) {
        // The bridge plugin sets arp_notify=1, so the kernel itself sends a GARP when the MAC changes
        // (docs/operations.md, live-migration targets): a target that must stay silent turns it off.
        await setSysctl('net.ipv4.conf.eth0.arp_notify', 0, pod.netns.name);
      }
      const att = attachment(
        files,
        pod.containerId,
        pod.netns.path,
        pod.result,
        { ...BURST, ...opts.options },
        opts.args,
      );
      const capture = await startCapture(scope(), { iface: pod.bridge, filter: 'arp or icmp6' });
      const add = await announcerAdd(scope(), att);
      await sleep(TAIL_WINDOW_MS);
      const frames = await capture.stop();
      return { files, pod, att, add, frames };
    }

    it.each<{ how: string; options: Record<string, unknown>; args?: string }>([
      { how: 'args.cni.announce: false', options: { args: { cni: { announce: false } } } },
      { how: 'CNI_ARGS ANNOUNCE=false', options: {}, args: `${K8S_ARGS};ANNOUNCE=false` },
      {
        how: 'ANNOUNCE=false with an override object that does not name enabled',
        options: { args: { cni: { announce: { count: 1 } } } },
        args: `${K8S_ARGS};ANNOUNCE=false`,
      },
      {
        how: 'args.cni.announce {enabled: false, mac: keep} over config mac: ip-derived',
        options: { mac: 'ip-derived', args: { cni: { announce: { enabled: false, mac: 'keep' } } } },
      },
      // off wins: ANNOUNCE=false is not undone by an override that turns announcing on
      ...[true, { enabled: true }].map((announce) => ({
        how: `ANNOUNCE=false under args.cni.announce: ${JSON.stringify(announce)}`,
        options: { args: { cni: { announce } } },
        args: `${K8S_ARGS};ANNOUNCE=false`,
      })),
    ])('$how: zero ARP/NA frames, MAC kept, result passed through', async ({ how, options, args }) => {
      const { files, pod, att, add, frames } = await addUnderCapture('off', { options, ...(args ? { args } : {}) });
      assertCniOk(`announcer ADD (${how})`, add);
      const sent = announcementsFrom(frames, [pod.mac, derivedMac(pod.ip)]);
      expect(sent, describeFrames(sent)).toEqual([]);
      expect(add.json).toEqual(pod.result);
      expect(await podMac(pod.netns.name)).toBe(pod.mac);
      // Nothing to restore and no later rounds: no record, no process, even before DEL.
      expect(await announcerLeftovers(files)).toEqual([]);
      assertCniOk('announcer DEL', await announcerDel(att));
      expect(await announcerLeftovers(files)).toEqual([]);
    });

    it('args.cni.announce: false with config mac: ip-derived still sets the MAC, and sends no ARP/NA', async () => {
      const { files, pod, att, add, frames } = await addUnderCapture('offmac', {
        options: { mac: 'ip-derived', args: { cni: { announce: false } } },
        silenceKernel: true,
      });
      assertCniOk('announcer ADD', add);
      const derived = derivedMac(pod.ip);
      const sent = announcementsFrom(frames, [pod.mac, derived]);
      expect(sent, describeFrames(sent)).toEqual([]);
      expect(await podMac(pod.netns.name)).toBe(derived);
      expect(add.json).toEqual(withPodMac(pod.result, derived));
      expect(JSON.parse(await readFile(recordFile(files, att.containerId), 'utf8'))).toMatchObject({
        originalMacs: [{ name: 'eth0', mac: pod.mac }],
      });
      expect(await ownAnnouncerProcesses()).toEqual([]);

      await delRestores(att, pod.netns.name, pod.mac);
    });

    it('CNI_ARGS ANNOUNCE=bogus is code 4, and nothing is done', async () => {
      const { files } = await cleanStart(scope);
      const pod = await bridgePod('bogus');
      const att = attachment(
        files,
        pod.containerId,
        pod.netns.path,
        pod.result,
        { mac: 'ip-derived', ...BURST },
        `${K8S_ARGS};ANNOUNCE=bogus`,
      );
      const add = await announcerAdd(scope(), att);
      expect(add.code).toBe(1);
      // Env is read before stdin, so the error cannot carry the config's version (README: 1.1.0 then).
      expect(add.json).toMatchObject({ code: 4 });
      expect(add.json.msg).toContain('ANNOUNCE');
      expect(add.json.msg).toContain('bogus');
      expect(await podMac(pod.netns.name)).toBe(pod.mac);
      expect(await announcerLeftovers(files)).toEqual([]);
      // DEL reads CNI_ARGS too and refuses the same value; the scope's DEL (no CNI_ARGS) cleans up.
      expect((await announcerDel(att)).json).toMatchObject({ code: 4 });
    });
  });
});
