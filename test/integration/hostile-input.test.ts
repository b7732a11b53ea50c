// Issue 10, input and policy: stdin that is too big or too deep, an error that
// would list 36,000 bad fields, a CNI_NETNS that is another kind of namespace, a
// logFile that is a FIFO or a symlink, pod annotations that reach for node
// resources or try to undo the operator's choices, and a MAC the runtime chose.
// Each case asserts the documented outcome on the built binary: the code, one
// error object and no stack trace, frames sent or not, nothing left behind.
import { readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import {
  allocSubnet,
  ANNOUNCER,
  announcerFiles,
  assertCniOk,
  BRIDGE_PLUGIN,
  bridgeConfig,
  chainConfig,
  cniEnv,
  cniExec,
  createBridge,
  createNetns,
  createStandInPod,
  hostVeth,
  killStrays,
  linkShow,
  listLinks,
  listNetns,
  ownAnnouncerProcesses,
  podInterface,
  runCniCommand,
  runOk,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  startCapture,
  stateFiles,
  waitFor,
  type AnnouncerFiles,
  type CniCall,
  type CniOutput,
  type Frame,
  type Scope,
} from './harness';

/** Every netns and link this file creates starts with this. */
const PREFIX = `hi${RUN_TAG}`;
const NETWORK = `hostile-input-${RUN_TAG}`;
const CNI_VERSION = '1.0.0';
const MAIN_CONF = { name: NETWORK, cniVersion: CNI_VERSION };
/** A burst whose later rounds (+300, +600 ms) fall inside the capture window. */
const BURST = { count: 3, intervalMs: 300 };
/** How long a capture keeps running after ADD: past every round the tail could send. */
const TAIL_WINDOW_MS = 1500;

async function leftovers(): Promise<string[]> {
  const netns = (await listNetns()).filter((n) => n.startsWith(PREFIX));
  const links = (await listLinks()).map((l) => l.ifname).filter((n) => n.startsWith(PREFIX));
  return [...netns.map((n) => `netns ${n}`), ...links.map((l) => `link ${l}`)];
}

/** Asserts a CNI error reply: exit 1, one JSON object with only spec keys, the code, no stack trace anywhere. */
function expectCniError(out: CniOutput, code: number, mentions: readonly string[] = []): { code: number; msg: string } {
  const why = `stdout: ${out.stdout.slice(0, 2000)} stderr: ${out.stderr.slice(0, 2000)}`;
  expect(out.code, why).toBe(1);
  const lines = out.stdout.trim().split('\n');
  expect(lines, why).toHaveLength(1);
  const doc = JSON.parse(lines[0]!);
  expect(Object.keys(doc).every((k) => ['cniVersion', 'code', 'msg', 'details'].includes(k)), why).toBe(true);
  expect(doc.code, why).toBe(code);
  for (const m of mentions) expect(doc.msg, why).toContain(m);
  for (const stream of [out.stdout, out.stderr]) {
    expect(stream).not.toContain('    at ');
    expect(stream).not.toMatch(/\.(ts|js):\d+/);
  }
  return doc;
}

/** Nothing of the announcer is left: no process of this run, nothing in stateDir. */
async function expectNothingLeft(files: AnnouncerFiles): Promise<void> {
  await waitFor(async () => (await ownAnnouncerProcesses()).length === 0, { timeoutMs: 5000, what: 'no announcer process of this run' }).catch(
    async () => expect(await ownAnnouncerProcesses()).toEqual([]),
  );
  expect((await stateFiles(files.stateDir)).filter((f) => !f.startsWith('.'))).toEqual([]);
}

/** GARPs for `ip` (ARP with sender IP = target IP) in a capture. */
function garpsFor(frames: readonly Frame[], ip: string): Frame[] {
  return frames.filter((f) => f.arp?.isGratuitous && f.arp.senderIp === ip);
}

/** An IPv4-only stand-in pod (both veth ends in its netns), its prevResult, and the announcer's files. */
interface StandIn {
  files: AnnouncerFiles;
  ns: string;
  path: string;
  ip: string;
  mac: string;
  prevResult: Record<string, unknown>;
  call: Omit<CniCall, 'command'>;
  conf(extra?: Record<string, unknown>, prevResult?: unknown): Record<string, unknown>;
}

async function standIn(scope: Scope, tag: string): Promise<StandIn> {
  killStrays(scope, { strict: true });
  const files = await announcerFiles(scope);
  const net = allocSubnet();
  const pod = await createStandInPod(scope, { prefix: PREFIX, v4: [net.v4Cidr(7)] });
  const prevResult = {
    cniVersion: CNI_VERSION,
    interfaces: [{ name: 'eth0', mac: pod.mac, sandbox: pod.netns.path }],
    ips: [{ address: net.v4Cidr(7), interface: 0 }],
  };
  const containerId = `${PREFIX}-${tag}`;
  const call = { containerId, netns: pod.netns.path, ifname: 'eth0' };
  // Registered first, so it runs last: whatever a test did, its attachment is deleted.
  scope.defer(async () => {
    assertCniOk(`announcer DEL ${containerId}`, await cniExec(ANNOUNCER, { ...call, command: 'DEL' }, chainConfig(MAIN_CONF, { type: 'announcer', stateDir: files.stateDir }, prevResult)));
  }, `announcer DEL ${containerId}`);
  return {
    files,
    ns: pod.netns.name,
    path: pod.netns.path,
    ip: net.v4(7),
    mac: pod.mac,
    prevResult,
    call,
    conf: (extra = {}, prev: unknown = prevResult) =>
      chainConfig(MAIN_CONF, { type: 'announcer', stateDir: files.stateDir, logFile: files.logFile, logLevel: 'debug', ...extra }, prev),
  };
}

/** Runs ADD on a stand-in pod while capturing ARP on the peer, until TAIL_WINDOW_MS after ADD. */
async function addUnderCapture(scope: Scope, pod: StandIn, conf: Record<string, unknown>, args?: string) {
  const capture = await startCapture(scope, { netns: pod.ns, iface: 'peer0', filter: 'arp' });
  const add = await cniExec(ANNOUNCER, { ...pod.call, ...(args === undefined ? {} : { args }), command: 'ADD' }, conf);
  await sleep(TAIL_WINDOW_MS);
  const frames = await capture.stop();
  return { add, frames, garps: garpsFor(frames, pod.ip) };
}

describe.skipIf(skipIntegration())('hostile input and pod policy (issue 10)', () => {
  const scope = scopePerTest();

  afterAll(async () => {
    await waitFor(async () => (await leftovers()).length === 0, { what: `no netns or link named ${PREFIX}*` }).catch(async () =>
      expect(await leftovers()).toEqual([]),
    );
    expect(await ownAnnouncerProcesses()).toEqual([]);
  });

  describe('stdin', () => {
    it('3,000 levels of JSON nesting in prevResult: code 6 for ADD, CHECK and DEL, no stack trace, nothing done', async () => {
      const pod = await standIn(scope(), 'deep');
      const deep = `${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}`;
      const text = JSON.stringify(pod.conf({ mac: 'ip-derived' })).replace('"cniVersion":"1.0.0"', `"cniVersion":"1.0.0","x-deep":${deep}`);
      expect(text).toContain('{"a":{"a":');
      for (const command of ['ADD', 'CHECK', 'DEL']) {
        const out = await cniExec(ANNOUNCER, { ...pod.call, command }, text);
        expectCniError(out, 6, ['64 levels']);
      }
      expect((await linkShow('eth0', pod.ns))?.mac).toBe(pod.mac);
      await expectNothingLeft(pod.files);
    });

    it.each([
      { what: '17 MiB', bytes: 17 * 1024 * 1024 },
      { what: '600 MiB', bytes: 600 * 1024 * 1024 },
    ])('$what on stdin: code 5 naming the 16 MiB limit, without reading it all', async ({ bytes }) => {
      const pod = await standIn(scope(), 'big');
      // A shell feeds the bytes: the plugin stops reading at the limit and the writer gets EPIPE.
      const out = await runCniCommand(
        'sh',
        ['-c', 'head -c "$1" /dev/zero | tr "\\0" " " | "$0"', ANNOUNCER, String(bytes)],
        { ...pod.call, command: 'ADD' },
        '',
        cniEnv({ ...pod.call, command: 'ADD' }),
      );
      const doc = expectCniError(out, 5, ['16 MiB', 'stdin']);
      expect(doc.msg).not.toContain('empty');
      await expectNothingLeft(pod.files);
    });

    it('36,000 bad ips entries: a short message naming the first five and counting the rest', async () => {
      const pod = await standIn(scope(), 'ips');
      const ips = Array.from({ length: 36_000 }, (_, i) => ({ address: `10.0.${i}.300/24`, interface: 0 }));
      const out = await cniExec(ANNOUNCER, { ...pod.call, command: 'ADD' }, pod.conf({}, { ...pod.prevResult, ips }));
      const doc = expectCniError(out, 7, ['"prevResult.ips[0].address"', '"prevResult.ips[4].address"', '… and 35,995 more']);
      expect(doc.msg).not.toContain('"prevResult.ips[5].address"');
      expect(out.stdout.length).toBeLessThan(2000);
      await expectNothingLeft(pod.files);
    });
  });

  describe('CNI_NETNS of another namespace type', () => {
    it.each([
      ['mnt', 'mount'],
      ['uts', 'uts'],
      ['ipc', 'ipc'],
      ['pid', 'pid'],
      ['user', 'user'],
      ['cgroup', 'cgroup'],
    ])('/proc/PID/ns/%s: code 4 for ADD and CHECK, naming it a %s namespace; DEL ignores it', async (file, kind) => {
      const pod = await standIn(scope(), `ns${file}`);
      const netns = `/proc/${process.pid}/ns/${file}`;
      // mac: ip-derived and a burst: a wrongly accepted ADD would change the MAC and leave a tail.
      const conf = pod.conf({ mac: 'ip-derived', ...BURST });
      for (const command of ['ADD', 'CHECK']) {
        const out = await cniExec(ANNOUNCER, { ...pod.call, netns, command }, conf);
        expectCniError(out, 4, ['CNI_NETNS', netns, `it is a ${kind} namespace`]);
      }
      const del = await cniExec(ANNOUNCER, { ...pod.call, netns, command: 'DEL' }, conf);
      expect([del.code, del.stdout]).toEqual([0, '']);
      expect((await linkShow('eth0', pod.ns))?.mac).toBe(pod.mac);
      await expectNothingLeft(pod.files);
    });
  });

  describe('logFile', () => {
    it('a FIFO without a reader: ADD neither hangs nor fails, and the FIFO gets nothing', async () => {
      const pod = await standIn(scope(), 'fifo');
      const fifo = join(pod.files.dir, 'announcer.fifo');
      await runOk('mkfifo', [fifo]);
      const conf = pod.conf({ logFile: fifo, count: 1 });
      // Before the fix this ADD never returned; the harness's timeout would fail the test.
      const add = await cniExec(ANNOUNCER, { ...pod.call, command: 'ADD', timeoutMs: 20_000 }, conf);
      assertCniOk('announcer ADD with a FIFO logFile', add);
      const del = await cniExec(ANNOUNCER, { ...pod.call, command: 'DEL', timeoutMs: 20_000 }, conf);
      assertCniOk('announcer DEL with a FIFO logFile', del);
      expect((await stat(fifo)).isFIFO()).toBe(true);
      await expectNothingLeft(pod.files);
    });

    it('a symlink: not followed, its target untouched', async () => {
      const pod = await standIn(scope(), 'link');
      const victim = join(pod.files.dir, 'victim');
      await writeFile(victim, 'precious\n');
      const link = join(pod.files.dir, 'announcer-link.log');
      await symlink(victim, link);
      assertCniOk('announcer ADD with a symlinked logFile', await cniExec(ANNOUNCER, { ...pod.call, command: 'ADD' }, pod.conf({ logFile: link, count: 1 })));
      expect(await readFile(victim, 'utf8')).toBe('precious\n');
      await expectNothingLeft(pod.files);
    });
  });

  describe('pod annotations (args.cni.announce) under podOverrides', () => {
    it('the default policy ignores a 60-day burst and logs it: the conflist burst runs, and nothing outlives it', async () => {
      const pod = await standIn(scope(), 'burst');
      const conf = pod.conf({ ...BURST, args: { cni: { announce: { count: 10, intervalMs: 60000, backoff: 4 } } } });
      const { add, garps } = await addUnderCapture(scope(), pod, conf);
      assertCniOk('announcer ADD', add);
      expect(garps).toHaveLength(BURST.count);
      const log = await pod.files.log();
      for (const field of ['count', 'intervalMs', 'backoff']) {
        expect(log).toMatch(new RegExp(` WARN ignoring a pod override .*field=args\\.cni\\.announce\\.${field} `));
      }
      // The tail ended with its last round; its record waits for DEL.
      await waitFor(async () => (await ownAnnouncerProcesses()).length === 0, { what: 'the tail gone after its last round' });
      assertCniOk('announcer DEL', await cniExec(ANNOUNCER, { ...pod.call, command: 'DEL' }, conf));
      await expectNothingLeft(pod.files);
    });

    it.each<{ how: string; conf: Record<string, unknown>; args?: string }>([
      {
        how: 'count 0 in the conflist, ANNOUNCE=true and announce: true, enabled in podOverrides',
        conf: { count: 0, podOverrides: ['enabled=false'], args: { cni: { announce: true } } },
        args: 'IgnoreUnknown=1;ANNOUNCE=true',
      },
      { how: 'ipv4: false in the conflist, announce {ipv4: true}', conf: { ipv4: false, args: { cni: { announce: { ipv4: true } } } } },
      { how: 'ANNOUNCE=false, announce: true', conf: { args: { cni: { announce: true } } }, args: 'IgnoreUnknown=1;ANNOUNCE=false' },
      {
        how: 'ANNOUNCE=false, announce {enabled: true, count: 3} with count allowed',
        conf: { podOverrides: ['enabled=false', 'count'], args: { cni: { announce: { enabled: true, count: 3 } } } },
        args: 'IgnoreUnknown=1;ANNOUNCE=false',
      },
    ])('nothing re-enables announcing ($how): zero GARPs', async ({ conf, args }) => {
      const pod = await standIn(scope(), 'reen');
      const { add, garps } = await addUnderCapture(scope(), pod, pod.conf({ ...BURST, ...conf }), args);
      assertCniOk('announcer ADD', add);
      expect(add.json).toEqual({ ...pod.prevResult, cniVersion: CNI_VERSION });
      expect(garps).toEqual([]);
      await expectNothingLeft(pod.files);
    });

    it('a pod cannot pick the MAC prefix by default: the derived MAC uses the conflist prefix', async () => {
      const pod = await standIn(scope(), 'pfx');
      const conf = pod.conf({ mac: 'ip-derived', count: 1, args: { cni: { announce: { macPrefix: '02:00' } } } });
      const add = assertCniOk('announcer ADD', await cniExec(ANNOUNCER, { ...pod.call, command: 'ADD' }, conf));
      const expected = `0a:58:${pod.ip.split('.').map((b) => Number(b).toString(16).padStart(2, '0')).join(':')}`;
      expect((await linkShow('eth0', pod.ns))?.mac).toBe(expected);
      expect(add.json.interfaces[0].mac).toBe(expected);
      expect(await pod.files.log()).toMatch(/ WARN ignoring a pod override .*field=args\.cni\.announce\.macPrefix /);
      assertCniOk('announcer DEL', await cniExec(ANNOUNCER, { ...pod.call, command: 'DEL' }, conf));
      expect((await linkShow('eth0', pod.ns))?.mac).toBe(pod.mac);
      await expectNothingLeft(pod.files);
    });

    it('an allowed field applies: podOverrides ["count"] and announce {count: 1} send one round', async () => {
      const pod = await standIn(scope(), 'allow');
      const conf = pod.conf({ ...BURST, podOverrides: ['count'], args: { cni: { announce: { count: 1 } } } });
      const { add, garps } = await addUnderCapture(scope(), pod, conf);
      assertCniOk('announcer ADD', add);
      expect(garps).toHaveLength(1);
      await expectNothingLeft(pod.files);
    });

    it('a pod opts out under the default policy: zero GARPs', async () => {
      const pod = await standIn(scope(), 'off');
      const { add, garps } = await addUnderCapture(scope(), pod, pod.conf({ ...BURST, args: { cni: { announce: { enabled: false, mac: 'keep' } } } }));
      assertCniOk('announcer ADD', add);
      expect(garps).toEqual([]);
      await expectNothingLeft(pod.files);
    });
  });

  describe('the burst cap', () => {
    it.each<{ what: string; conf: Record<string, unknown>; fields: string[] }>([
      { what: 'in the conflist', conf: { count: 10, intervalMs: 60000, backoff: 2 }, fields: ['"count" 10', '"intervalMs" 60000', '"backoff" 2'] },
      {
        what: 'through allowed pod overrides',
        conf: { podOverrides: ['count', 'intervalMs', 'backoff'], args: { cni: { announce: { count: 10, intervalMs: 60000, backoff: 4 } } } },
        fields: ['"args.cni.announce.count" 10', '"args.cni.announce.intervalMs" 60000', '"args.cni.announce.backoff" 4'],
      },
    ])('a burst longer than 10 minutes $what: code 7 naming the fields, nothing done', async ({ conf, fields }) => {
      const pod = await standIn(scope(), 'cap');
      const out = await cniExec(ANNOUNCER, { ...pod.call, command: 'ADD' }, pod.conf({ mac: 'ip-derived', ...conf }));
      expectCniError(out, 7, [...fields, '10 min']);
      expect((await linkShow('eth0', pod.ns))?.mac).toBe(pod.mac);
      await expectNothingLeft(pod.files);
    });
  });

  describe('a MAC the runtime chose, with mac: ip-derived', () => {
    it.each<{ how: string; args?: string; announcer?: Record<string, unknown>; bridge?: Record<string, unknown> }>([
      { how: 'CNI_ARGS MAC= (podman --mac-address)', args: 'IgnoreUnknown=1;MAC=02:c0:ff:ee:00:0b' },
      { how: 'args.cni.mac', announcer: { args: { cni: { mac: '02:c0:ff:ee:00:0b' } } }, bridge: { args: { cni: { mac: '02:c0:ff:ee:00:0b' } } } },
    ])('$how: kept, reported unchanged, announced with, and not compared by CHECK', async ({ args, announcer = {}, bridge }) => {
      const requested = '02:c0:ff:ee:00:0b';
      killStrays(scope(), { strict: true });
      const files = await announcerFiles(scope());
      const net = allocSubnet();
      const br = await createBridge(scope(), { v4Cidr: net.v4Cidr(1), prefix: PREFIX });
      const netns = await createNetns(scope(), PREFIX);
      const containerId = `${PREFIX}-rtmac`;
      const call = { containerId, netns: netns.path, ifname: 'eth0', ...(args === undefined ? {} : { args }) };
      // The bridge plugin is the main plugin: it applies the runtime's MAC (the harness passes CNI_ARGS through cniExec).
      const result = await addBridgePodWithArgs(scope(), { bridge: br, netns: netns.path, ip: net.v4Cidr(5), gw: net.v4(1), containerId, extra: bridge }, args);
      expect(podInterface(result)?.mac).toBe(requested);
      const host = hostVeth(result, br)!;
      await waitFor(async () => (await runOk('bridge', ['-j', 'link', 'show', 'dev', host.name])).stdout.includes('"forwarding"'), {
        what: 'bridge port forwarding',
      });
      const conf = chainConfig(MAIN_CONF, { type: 'announcer', mac: 'ip-derived', count: 1, stateDir: files.stateDir, logFile: files.logFile, ...announcer }, result);
      scope().defer(async () => {
        assertCniOk('announcer DEL', await cniExec(ANNOUNCER, { ...call, command: 'DEL' }, conf));
      }, 'announcer DEL');

      const capture = await startCapture(scope(), { iface: br, filter: 'arp' });
      const add = assertCniOk('announcer ADD', await cniExec(ANNOUNCER, { ...call, command: 'ADD' }, conf));
      const frames = await capture.stop();

      expect((await linkShow('eth0', netns.name))?.mac).toBe(requested);
      expect(add.json).toEqual({ ...result, cniVersion: CNI_VERSION });
      const garps = garpsFor(frames, net.v4(5));
      expect(garps.length).toBeGreaterThanOrEqual(1);
      expect(garps.every((f) => f.eth.src === requested && f.arp!.senderMac === requested)).toBe(true);
      expect(await files.log()).toMatch(/ INFO the runtime chose the MAC: keeping it instead of the IP-derived one /);
      expect(await stateFiles(files.stateDir).then((f) => f.filter((n) => !n.startsWith('.')))).toEqual([]);
      expect(await cniExec(ANNOUNCER, { ...call, command: 'CHECK' }, { ...conf, prevResult: add.json })).toMatchObject({ code: 0, stdout: '' });
      assertCniOk('announcer DEL', await cniExec(ANNOUNCER, { ...call, command: 'DEL' }, conf));
      expect((await linkShow('eth0', netns.name))?.mac).toBe(requested);
      await expectNothingLeft(files);
    });
  });
});

/** What addBridgePod does, with CNI_ARGS given to the bridge plugin too: a runtime passes the same CNI_ARGS to every plugin. */
async function addBridgePodWithArgs(
  scope: Scope,
  opts: { bridge: string; netns: string; ip: string; gw: string; containerId: string; extra?: Record<string, unknown> | undefined },
  args: string | undefined,
): Promise<any> {
  const config = bridgeConfig({ bridge: opts.bridge, ip: opts.ip, gw: opts.gw, name: NETWORK, cniVersion: CNI_VERSION, ...(opts.extra ? { extra: opts.extra } : {}) });
  const call = { containerId: opts.containerId, netns: opts.netns, ifname: 'eth0', ...(args === undefined ? {} : { args }) };
  scope.defer(async () => {
    assertCniOk('bridge DEL', await cniExec(BRIDGE_PLUGIN, { ...call, command: 'DEL' }, config));
  }, `bridge DEL ${opts.containerId}`);
  return assertCniOk('bridge ADD', await cniExec(BRIDGE_PLUGIN, { ...call, command: 'ADD' }, config)).json;
}
