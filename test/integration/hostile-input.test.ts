// Input and policy: stdin that is too big or too deep, an error that
// would list 36,000 bad fields, a CNI_NETNS that is another kind of namespace, a
// logFile that is a FIFO or a symlink, pod annotations that reach for node
// resources or try to undo the operator's choices, and a MAC the runtime chose.
// Each case asserts the documented outcome on the built binary: the code, one
// error object and no stack trace, frames sent or not, nothing left behind.
import { readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  allocSubnet,
  ANNOUNCER,
  announcerAdd,
  announcerDel,
  announcerFiles,
  announcerLeftovers,
  announcerRun,
  assertCniOk,
  chainConfig,
  cniEnv,
  cniExec,
  expectCniError,
  createBridgePod,
  createStandInPod,
  killStrays,
  linkShow,
  ownAnnouncerProcesses,
  podPrevResult,
  runCniCommand,
  runOk,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  startCapture,
  stateFiles,
  waitFor,
  type AnnouncerAttachment,
  type AnnouncerFiles,
  type CniCall,
  type Scope,
  garpsFor,
  derivedMac,
} from './harness';

/** Every netns and link this file creates starts with this. */
const PREFIX = `hi${RUN_TAG}`;
const NETWORK = `hostile-input-${RUN_TAG}`;
const CNI_VERSION = '1.0.0';
const MAIN_CONF = { name: NETWORK, cniVersion: CNI_VERSION };
/** A burst whose later rounds (+300, +600 ms) fall inside the capture window. */
const BURST = { count: 3, intervalMs: 300 };
/** How long a capture keeps running after ADD: past every round the background could send. */
const TAIL_WINDOW_MS = 1500;

/** An IPv4-only stand-in pod (both veth ends in its netns), and the announcer on its eth0 (not ADDed yet). */
interface StandIn {
  files: AnnouncerFiles;
  ns: string;
  ip: string;
  mac: string;
  prevResult: Record<string, unknown>;
  att: AnnouncerAttachment;
  /** The CNI_* env of the attachment (command to be set), for stdin no attachment would send. */
  call: Omit<CniCall, 'command'>;
  /** The announcer's stdin with `extra` options, for stdin no attachment would send. */
  conf(extra?: Record<string, unknown>): Record<string, unknown>;
}

async function standIn(scope: Scope, tag: string): Promise<StandIn> {
  killStrays(scope, { strict: true });
  const files = await announcerFiles(scope);
  const net = allocSubnet();
  const pod = await createStandInPod(scope, { prefix: PREFIX, v4: [net.v4Cidr(7)] });
  const prevResult = podPrevResult(pod.netns.path, [{ name: 'eth0', mac: pod.mac, addresses: [net.v4Cidr(7)] }]);
  const att = {
    mainConf: MAIN_CONF,
    prevResult,
    containerId: `${PREFIX}-${tag}`,
    netns: pod.netns.path,
    files,
    options: { logLevel: 'debug' },
  };
  return {
    files,
    ns: pod.netns.name,
    ip: net.v4(7),
    mac: pod.mac,
    prevResult,
    att,
    call: { containerId: att.containerId, netns: att.netns, ifname: 'eth0' },
    conf: (extra = {}) =>
      chainConfig(
        MAIN_CONF,
        { type: 'announcer', stateDir: files.stateDir, logFile: files.logFile, ...att.options, ...extra },
        prevResult,
      ),
  };
}

/** Runs ADD (`options` over the attachment's) while capturing ARP on the peer, until TAIL_WINDOW_MS after ADD. */
async function addUnderCapture(scope: Scope, pod: StandIn, options: Record<string, unknown>, args?: string) {
  const capture = await startCapture(scope, { netns: pod.ns, iface: 'peer0', filter: 'arp' });
  const add = await announcerAdd(scope, { ...pod.att, ...(args === undefined ? {} : { args }) }, options);
  await sleep(TAIL_WINDOW_MS);
  const frames = await capture.stop();
  return { add, frames, garps: garpsFor(frames, pod.mac, pod.ip) };
}

describe.skipIf(skipIntegration())('hostile input and pod policy', () => {
  const scope = scopePerTest(PREFIX);

  describe('stdin', () => {
    const levelsOfJSONTitle =
      '3,000 levels of JSON nesting in prevResult: code 6 for ADD, CHECK and DEL, no stack trace, nothing done';
    it(levelsOfJSONTitle, async () => {
      const pod = await standIn(scope(), 'deep');
      const deep = `${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}`;
      const text = JSON.stringify(pod.conf({ mac: 'ip-derived' })).replace(
        '"cniVersion":"1.0.0"',
        `"cniVersion":"1.0.0","x-deep":${deep}`,
      );
      expect(text).toContain('{"a":{"a":');
      for (const command of ['ADD', 'CHECK', 'DEL']) {
        const out = await cniExec(ANNOUNCER, { ...pod.call, command }, text);
        expectCniError(out, 6, ['64 levels']);
      }
      expect((await linkShow('eth0', pod.ns))?.mac).toBe(pod.mac);
      expect(await announcerLeftovers(pod.files)).toEqual([]);
    });

    it('600 MiB on stdin: code 5 naming the 1 MiB limit the shim forwards, without reading it all', async () => {
      const bytes = 600 * 1024 * 1024;
      const pod = await standIn(scope(), 'big');
      // A shell feeds the bytes: the plugin stops reading at the limit and the writer gets EPIPE.
      const out = await runCniCommand(
        'sh',
        ['-c', 'head -c "$1" /dev/zero | tr "\\0" " " | "$0"', ANNOUNCER, String(bytes)],
        { ...pod.call, command: 'ADD' },
        '',
        cniEnv({ ...pod.call, command: 'ADD' }),
      );
      const doc = expectCniError(out, 5, ['1 MiB', 'stdin']);
      expect(doc.msg).not.toContain('empty');
      expect(await announcerLeftovers(pod.files)).toEqual([]);
    });

    const badIpsEntriesTitle =
      '20,000 bad ips entries (within the 1 MiB the shim forwards): a short ' +
      'message naming the first five and counting the rest';
    it(badIpsEntriesTitle, async () => {
      const pod = await standIn(scope(), 'ips');
      const ips = Array.from({ length: 20_000 }, (_, i) => ({ address: `10.0.${i}.300/24`, interface: 0 }));
      const out = await announcerAdd(scope(), { ...pod.att, prevResult: { ...pod.prevResult, ips } });
      const doc = expectCniError(out, 7, [
        '"prevResult.ips[0].address"',
        '"prevResult.ips[4].address"',
        '… and 19,995 more',
      ]);
      expect(doc.msg).not.toContain('"prevResult.ips[5].address"');
      expect(out.stdout.length).toBeLessThan(2000);
      expect(await announcerLeftovers(pod.files)).toEqual([]);
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
      // mac: ip-derived and a burst: a wrongly accepted ADD would change the MAC and leave background rounds.
      const att = { ...pod.att, netns, options: { ...pod.att.options, mac: 'ip-derived', ...BURST } };
      expectCniError(await announcerAdd(scope(), att), 4, ['CNI_NETNS', netns, `it is a ${kind} namespace`]);
      expectCniError(await announcerRun(att, 'CHECK'), 4, ['CNI_NETNS', netns, `it is a ${kind} namespace`]);
      const del = await announcerDel(att);
      expect([del.code, del.stdout]).toEqual([0, '']);
      expect((await linkShow('eth0', pod.ns))?.mac).toBe(pod.mac);
      expect(await announcerLeftovers(pod.files)).toEqual([]);
    });
  });

  describe('logFile', () => {
    it('a FIFO without a reader: ADD neither hangs nor fails, and the FIFO gets nothing', async () => {
      const pod = await standIn(scope(), 'fifo');
      const fifo = join(pod.files.dir, 'announcer.fifo');
      await runOk('mkfifo', [fifo]);
      const att = { ...pod.att, files: { ...pod.files, logFile: fifo } };
      // Before the fix this ADD never returned; the harness's timeout would fail the test.
      assertCniOk('announcer ADD with a FIFO logFile', await announcerAdd(scope(), att, { count: 1 }));
      assertCniOk('announcer DEL with a FIFO logFile', await announcerDel(att));
      expect((await stat(fifo)).isFIFO()).toBe(true);
      expect(await announcerLeftovers(pod.files)).toEqual([]);
    });

    it('a symlink: not followed, its target untouched', async () => {
      const pod = await standIn(scope(), 'link');
      const victim = join(pod.files.dir, 'victim');
      await writeFile(victim, 'precious\n');
      const link = join(pod.files.dir, 'announcer-link.log');
      await symlink(victim, link);
      assertCniOk(
        'announcer ADD with a symlinked logFile',
        await announcerAdd(scope(), { ...pod.att, files: { ...pod.files, logFile: link } }, { count: 1 }),
      );
      expect(await readFile(victim, 'utf8')).toBe('precious\n');
      expect(await announcerLeftovers(pod.files)).toEqual([]);
    });
  });

  describe('pod annotations (args.cni.announce) under podOverrides', () => {
    const defaultPolicyIgnoresTitle =
      'the default policy ignores a 60-day burst and logs it: the conflist burst runs, and nothing outlives it';
    it(defaultPolicyIgnoresTitle, async () => {
      const pod = await standIn(scope(), 'burst');
      const { add, garps } = await addUnderCapture(scope(), pod, {
        ...BURST,
        args: { cni: { announce: { count: 10, intervalMs: 60000, backoff: 4 } } },
      });
      assertCniOk('announcer ADD', add);
      expect(garps).toHaveLength(BURST.count);
      const ignored = (await pod.files.logged('warn', 'ignoring a pod override')).map((r) => r.fields.field);
      for (const field of ['count', 'intervalMs', 'backoff']) expect(ignored).toContain(`args.cni.announce.${field}`);
      // The background work ended with its last round; its record waits for DEL.
      await waitFor(async () => (await ownAnnouncerProcesses()).length === 0, {
        what: 'the background announcer gone after the last round',
      });
      assertCniOk('announcer DEL', await announcerDel(pod.att));
      expect(await announcerLeftovers(pod.files)).toEqual([]);
    });

    it.each<{ how: string; conf: Record<string, unknown>; args?: string }>([
      {
        how: 'count 0 in the conflist, ANNOUNCE=true and announce: true, enabled in podOverrides',
        conf: { count: 0, podOverrides: ['enabled=false'], args: { cni: { announce: true } } },
        args: 'IgnoreUnknown=1;ANNOUNCE=true',
      },
      {
        how: 'ipv4: false in the conflist, announce {ipv4: true}',
        conf: { ipv4: false, args: { cni: { announce: { ipv4: true } } } },
      },
      {
        how: 'ANNOUNCE=false, announce: true',
        conf: { args: { cni: { announce: true } } },
        args: 'IgnoreUnknown=1;ANNOUNCE=false',
      },
      {
        how: 'ANNOUNCE=false, announce {enabled: true, count: 3} with count allowed',
        conf: { podOverrides: ['enabled=false', 'count'], args: { cni: { announce: { enabled: true, count: 3 } } } },
        args: 'IgnoreUnknown=1;ANNOUNCE=false',
      },
    ])('nothing re-enables announcing ($how): zero GARPs', async ({ conf, args }) => {
      const pod = await standIn(scope(), 'reen');
      const { add, garps, frames } = await addUnderCapture(scope(), pod, { ...BURST, ...conf }, args);
      assertCniOk('announcer ADD', add);
      expect(add.json).toEqual({ ...pod.prevResult, cniVersion: CNI_VERSION });
      expect(garps).toEqual([]);
      expect(frames.filter((f) => f.arp?.senderIp === pod.ip)).toEqual([]); // nor from another MAC
      expect(await announcerLeftovers(pod.files)).toEqual([]);
    });

    it('a pod cannot pick the MAC prefix by default: the derived MAC uses the conflist prefix', async () => {
      const pod = await standIn(scope(), 'pfx');
      const add = assertCniOk(
        'announcer ADD',
        await announcerAdd(scope(), pod.att, {
          mac: 'ip-derived',
          count: 1,
          args: { cni: { announce: { macPrefix: '02:00' } } },
        }),
      );
      const expected = derivedMac(pod.ip); // with the conflist's (default) prefix 0a:58
      expect((await linkShow('eth0', pod.ns))?.mac).toBe(expected);
      expect(add.json.interfaces[0].mac).toBe(expected);
      const ignored = { field: 'args.cni.announce.macPrefix' };
      expect(await pod.files.logged('warn', 'ignoring a pod override', ignored)).not.toEqual([]);
      assertCniOk('announcer DEL', await announcerDel(pod.att));
      expect((await linkShow('eth0', pod.ns))?.mac).toBe(pod.mac);
      expect(await announcerLeftovers(pod.files)).toEqual([]);
    });

    it.each<[string, Record<string, unknown>, number]>([
      [
        'an allowed field applies: podOverrides ["count"] and announce {count: 1} send one round',
        { podOverrides: ['count'], args: { cni: { announce: { count: 1 } } } },
        1,
      ],
      [
        'a pod opts out under the default policy: zero GARPs',
        { args: { cni: { announce: { enabled: false, mac: 'keep' } } } },
        0,
      ],
    ])('%s', async (_title, conf, rounds) => {
      const pod = await standIn(scope(), `rounds${rounds}`);
      const { add, garps } = await addUnderCapture(scope(), pod, { ...BURST, ...conf });
      assertCniOk('announcer ADD', add);
      expect(garps).toHaveLength(rounds);
      expect(await announcerLeftovers(pod.files)).toEqual([]);
    });
  });

  describe('the burst cap', () => {
    it.each<{ what: string; conf: Record<string, unknown>; fields: string[] }>([
      {
        what: 'in the conflist',
        conf: { count: 10, intervalMs: 60000, backoff: 2 },
        fields: ['"count" 10', '"intervalMs" 60000', '"backoff" 2'],
      },
      {
        what: 'through allowed pod overrides',
        conf: {
          podOverrides: ['count', 'intervalMs', 'backoff'],
          args: { cni: { announce: { count: 10, intervalMs: 60000, backoff: 4 } } },
        },
        fields: [
          '"args.cni.announce.count" 10',
          '"args.cni.announce.intervalMs" 60000',
          '"args.cni.announce.backoff" 4',
        ],
      },
    ])('a burst longer than 10 minutes $what: code 7 naming the fields, nothing done', async ({ conf, fields }) => {
      const pod = await standIn(scope(), 'cap');
      const out = await announcerAdd(scope(), pod.att, { mac: 'ip-derived', ...conf });
      expectCniError(out, 7, [...fields, '10 min']);
      expect((await linkShow('eth0', pod.ns))?.mac).toBe(pod.mac);
      expect(await announcerLeftovers(pod.files)).toEqual([]);
    });
  });

  describe('a MAC the runtime chose, with mac: ip-derived', () => {
    it.each<{ how: string; args?: string; announcer?: Record<string, unknown>; bridge?: Record<string, unknown> }>([
      { how: 'CNI_ARGS MAC= (podman --mac-address)', args: 'IgnoreUnknown=1;MAC=02:c0:ff:ee:00:0b' },
      // The runtime hands the same runtimeConfig to every plugin that declares the capability.
      {
        how: 'runtimeConfig.mac',
        announcer: { capabilities: { mac: true }, runtimeConfig: { mac: '02:c0:ff:ee:00:0b' } },
        bridge: { capabilities: { mac: true }, runtimeConfig: { mac: '02:c0:ff:ee:00:0b' } },
      },
      {
        how: 'args.cni.mac',
        announcer: { args: { cni: { mac: '02:c0:ff:ee:00:0b' } } },
        bridge: { args: { cni: { mac: '02:c0:ff:ee:00:0b' } } },
      },
    ])(
      '$how: kept, reported unchanged, announced with, and not compared by CHECK',
      async ({ args, announcer = {}, bridge }) => {
        const requested = '02:c0:ff:ee:00:0b';
        killStrays(scope(), { strict: true });
        const files = await announcerFiles(scope());
        // The bridge plugin is the main plugin: it applies the runtime's MAC (a runtime passes the same CNI_ARGS to
        // every plugin).
        const pod = await createBridgePod(scope(), {
          prefix: PREFIX,
          containerId: `${PREFIX}-rtmac`,
          name: NETWORK,
          cniVersion: CNI_VERSION,
          ...(args === undefined ? {} : { args }),
          ...(bridge === undefined ? {} : { extra: bridge }),
          settle: true,
        });
        expect(pod.mac).toBe(requested);
        const att: AnnouncerAttachment = {
          mainConf: MAIN_CONF,
          prevResult: pod.result,
          containerId: pod.containerId,
          netns: pod.netns.path,
          files,
          options: { mac: 'ip-derived', count: 1, ...announcer },
          ...(args === undefined ? {} : { args }),
        };

        const capture = await startCapture(scope(), { iface: pod.bridge, filter: 'arp' });
        const add = assertCniOk('announcer ADD', await announcerAdd(scope(), att));
        const frames = await capture.stop();

        expect((await linkShow('eth0', pod.netns.name))?.mac).toBe(requested);
        expect(add.json).toEqual({ ...pod.result, cniVersion: CNI_VERSION });
        const garps = garpsFor(frames, requested, pod.ip);
        expect(garps).toHaveLength(1); // count 1
        expect(garps.every((f) => f.eth.src === requested && f.arp!.senderMac === requested)).toBe(true);
        const kept = 'the runtime chose the MAC: keeping it instead of the IP-derived one';
        expect(await files.logged('info', kept)).toHaveLength(1);
        expect(await stateFiles(files.stateDir)).toEqual([]);
        expect(await announcerRun({ ...att, prevResult: add.json }, 'CHECK')).toMatchObject({ code: 0, stdout: '' });
        assertCniOk('announcer DEL', await announcerDel(att));
        expect((await linkShow('eth0', pod.netns.name))?.mac).toBe(requested);
        expect(await announcerLeftovers(files)).toEqual([]);
      },
    );
  });
});
