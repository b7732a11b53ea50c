// The CNI protocol end to end: the built plugin chained after the real bridge
// plugin 1.1.1 in real namespaces. Passthrough in all five spec versions, CHECK,
// DEL, STATUS, GC, VERSION, and every bad input with its exact code, a single
// error object on stdout and nothing changed on the host.
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  OLD_MAC,
  ANNOUNCER,
  announcerFiles,
  announcerStatus,
  daemonStatus,
  chainConfig,
  cniExec,
  expectCniError,
  createBridgePod,
  daemonsOf,
  killStrays,
  listLinks,
  neighEntry,
  plantStale,
  podInterface,
  processesOf,
  runOk,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  stateFiles,
  waitDaemonGone,
  type AnnouncerFiles,
  type BridgePod,
  type CniCall,
  type CniOutput,
  type Scope,
  waitFor,
} from './harness';
import { cniExecInMountNs } from './harness/mountns-helpers';

/** Every netns and link this file creates starts with this. */
const PREFIX = `pr${RUN_TAG}`;
const VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;
/** A background announcer started here exits this long after its last job, so none outlives its test. */
const IDLE_EXIT_MS = 300;

/**
 * The announcer's files for one test, and no announcer process of ours outliving it but the stateDir's own (stopped at
 * close before the check).
 */
async function announcerDirs(scope: Scope): Promise<AnnouncerFiles> {
  killStrays(scope, { strict: true });
  return announcerFiles(scope);
}

/** The state records in stateDir (none when it does not exist). */
async function records(stateDir: string): Promise<string[]> {
  return (await stateFiles(stateDir)).filter((f) => f.endsWith('.json'));
}

/** A pod on a bridge of its own through the real bridge plugin, and what the announcer needs to chain on it. */
interface ProtocolPod extends BridgePod {
  /** The bridge plugin's config, in the announcer's cniVersion: its `name` and `cniVersion` go into the announcer's. */
  mainConf: { name: string; cniVersion: string; [key: string]: unknown };
  dirs: AnnouncerFiles;
  /** ADD/CHECK env for this pod (command to be set). */
  call: Omit<CniCall, 'command'>;
}

async function bridgePod(
  scope: Scope,
  opts: { cniVersion?: string; bridgeVersion?: string; ip6?: boolean; settle?: boolean } = {},
): Promise<ProtocolPod> {
  const dirs = await announcerDirs(scope);
  const bridgeVersion = opts.bridgeVersion ?? opts.cniVersion ?? '1.0.0';
  const pod = await createBridgePod(scope, {
    prefix: PREFIX,
    name: `${PREFIX}-net`,
    cniVersion: bridgeVersion,
    ...(opts.ip6 ? { ip6: true } : {}),
    ...(opts.settle ? { settle: true } : {}),
  });
  const mainConf = { ...pod.conf, cniVersion: opts.cniVersion ?? bridgeVersion };
  return { ...pod, mainConf, dirs, call: { containerId: pod.containerId, netns: pod.netns.path, ifname: 'eth0' } };
}

/** The announcer's conf entry: one round (no background work) unless said otherwise. */
function announcerConf(dirs: AnnouncerFiles, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'announcer',
    count: 1,
    stateDir: dirs.stateDir,
    logFile: dirs.logFile,
    idleExitMs: IDLE_EXIT_MS,
    ...extra,
  };
}

/** What the spec says the chained result must be: prevResult, in the config's version. */
function expectedResult(prevResult: any, cniVersion: string): any {
  const withVersion = cniVersion.startsWith('0.');
  return {
    ...prevResult,
    cniVersion,
    ips: prevResult.ips.map((ip: any) => {
      const { version: _drop, ...rest } = ip;
      return withVersion ? { ...rest, version: ip.address.includes(':') ? '6' : '4' } : rest;
    }),
  };
}

/**
 * What a bad call must not change: the bridge and its ports, its neighbour table, the pod's links and IPv4 addresses.
 */
async function l2Snapshot(bridge: string, podNs: string): Promise<unknown> {
  const links = (await listLinks())
    .filter((l) => l.ifname === bridge || l.master === bridge)
    .map((l) => ({ name: l.ifname, mac: l.mac, flags: l.flags, master: l.master, operstate: l.operstate }))
    .sort((a, b) => a.name.localeCompare(b.name));
  const neighJson = (await runOk('ip', ['-j', 'neigh', 'show', 'dev', bridge])).stdout.trim();
  const neigh = (neighJson === '' ? [] : (JSON.parse(neighJson) as any[]))
    .map((n) => ({ dst: n.dst, lladdr: n.lladdr, state: n.state }))
    .sort((a, b) => String(a.dst).localeCompare(String(b.dst)));
  const pod = (JSON.parse((await runOk('ip', ['-n', podNs, '-j', 'addr', 'show'])).stdout) as any[]).map((l) => ({
    name: l.ifname,
    mac: l.address,
    flags: l.flags,
    v4: (l.addr_info ?? []).filter((a: any) => a.family === 'inet').map((a: any) => `${a.local}/${a.prefixlen}`),
  }));
  return { links, neigh, pod };
}

describe.skipIf(skipIntegration())('CNI protocol against the real bridge plugin', () => {
  const scope = scopePerTest(PREFIX);

  describe('passthrough, then CHECK and DEL, in every version', () => {
    it.each(VERSIONS)(
      'cniVersion %s: the result is prevResult in that version, unknown fields kept',
      async (version) => {
        // Bridge 1.1.1 speaks up to 1.0.0; a 1.0.0 result is a valid 1.1.0 result (the two formats are identical).
        const bridgeVersion = version === '1.1.0' ? '1.0.0' : version;
        const pod = await bridgePod(scope(), { cniVersion: version, bridgeVersion, ip6: true });
        expect(pod.result.cniVersion).toBe(bridgeVersion);
        const prevResult = { ...pod.result, 'x-custom': { a: 1 } };
        const config = chainConfig(pod.mainConf, announcerConf(pod.dirs, { runtimeInjected: true }), prevResult);

        const add = await cniExec(ANNOUNCER, { ...pod.call, command: 'ADD' }, config);
        expect(add.code, add.stdout + add.stderr).toBe(0);
        expect(add.stdout.trim().split('\n')).toHaveLength(1);
        const expected = expectedResult(prevResult, version);
        expect(add.json).toEqual(expected);
        // The parts a runtime reads, spelled out.
        expect(add.json.cniVersion).toBe(version);
        expect(add.json['x-custom']).toEqual({ a: 1 });
        expect(add.json.interfaces).toEqual(pod.result.interfaces);
        expect(add.json.routes).toEqual(pod.result.routes);
        expect(add.json.dns).toEqual(pod.result.dns);
        expect(add.json.ips.map((ip: any) => ip.address)).toEqual([pod.net.v4Cidr(5), pod.net.v6Cidr(5)]);
        if (version.startsWith('0.')) expect(add.json.ips.map((ip: any) => ip.version)).toEqual(['4', '6']);
        else for (const ip of add.json.ips) expect(ip).not.toHaveProperty('version');

        const checkConfig = chainConfig(pod.mainConf, announcerConf(pod.dirs, { runtimeInjected: true }), add.json);
        const check = await cniExec(ANNOUNCER, { ...pod.call, command: 'CHECK' }, checkConfig);
        if (version === '0.3.0' || version === '0.3.1') {
          expectCniError(check, 1, ['CHECK', '0.4.0'], version);
        } else {
          expect(check.code, check.stdout + check.stderr).toBe(0);
          expect(check.stdout).toBe('');
        }

        const del = await cniExec(ANNOUNCER, { ...pod.call, command: 'DEL' }, checkConfig);
        expect(del.code, del.stdout + del.stderr).toBe(0);
        expect(del.stdout).toBe('');
        expect(await records(pod.dirs.stateDir)).toEqual([]);
      },
    );

    it('converts across versions: ips[].version added for 0.3.1, removed for 1.1.0', async () => {
      const pod = await bridgePod(scope(), { bridgeVersion: '1.0.0', cniVersion: '0.3.1' });
      const down = await cniExec(
        ANNOUNCER,
        { ...pod.call, command: 'ADD' },
        chainConfig(pod.mainConf, announcerConf(pod.dirs), pod.result),
      );
      expect(down.code, down.stdout).toBe(0);
      expect(down.json).toEqual(expectedResult(pod.result, '0.3.1'));
      expect(down.json.ips[0].version).toBe('4');

      const up = await cniExec(
        ANNOUNCER,
        { ...pod.call, command: 'ADD' },
        chainConfig({ ...pod.mainConf, cniVersion: '1.1.0' }, announcerConf(pod.dirs), down.json),
      );
      expect(up.code, up.stdout).toBe(0);
      expect(up.json).toEqual(expectedResult(pod.result, '1.1.0'));
      expect(up.json.ips[0]).not.toHaveProperty('version');
    });
  });

  describe('CHECK', () => {
    it('fails with 102 naming the address once it is removed from the pod', async () => {
      const pod = await bridgePod(scope());
      const config = chainConfig(pod.mainConf, announcerConf(pod.dirs), pod.result);
      const add = await cniExec(ANNOUNCER, { ...pod.call, command: 'ADD' }, config);
      expect(add.code, add.stdout).toBe(0);
      const before = await cniExec(ANNOUNCER, { ...pod.call, command: 'CHECK' }, config);
      expect([before.code, before.stdout]).toEqual([0, '']);

      await runOk('ip', ['-n', pod.netns.name, 'addr', 'del', pod.net.v4Cidr(5), 'dev', 'eth0']);
      const check = await cniExec(ANNOUNCER, { ...pod.call, command: 'CHECK' }, config);
      expectCniError(check, 102, [pod.net.v4(5), 'eth0'], '1.0.0');
    });

    it('fails with 101 when the pod interface prevResult names does not exist', async () => {
      const pod = await bridgePod(scope());
      const prevResult = structuredClone(pod.result);
      const podIf = podInterface(prevResult)!;
      podIf.name = 'ghost0';
      const check = await cniExec(
        ANNOUNCER,
        { ...pod.call, command: 'CHECK' },
        chainConfig(pod.mainConf, announcerConf(pod.dirs), prevResult),
      );
      expectCniError(check, 101, ['ghost0'], '1.0.0');
    });

    it('fails with 101 when CNI_IFNAME names no interface and prevResult lists none in the pod', async () => {
      const pod = await bridgePod(scope());
      const prevResult = {
        ...pod.result,
        interfaces: [],
        ips: pod.result.ips.map(({ interface: _i, ...ip }: any) => ip),
      };
      const check = await cniExec(
        ANNOUNCER,
        { ...pod.call, ifname: 'eth9', command: 'CHECK' },
        chainConfig(pod.mainConf, announcerConf(pod.dirs), prevResult),
      );
      expectCniError(check, 101, ['eth9'], '1.0.0');
    });
  });

  describe('DEL', () => {
    /**
     * ADD with background work (rounds 2 and 3 a minute apart, so it is still
     * pending at DEL), and the record it leaves; resolves once the stateDir's one
     * background announcer has the job.
     */
    async function addWithBackground(pod: ProtocolPod): Promise<Record<string, unknown>> {
      const config = chainConfig(pod.mainConf, announcerConf(pod.dirs, { count: 3, intervalMs: 60_000 }), pod.result);
      const add = await cniExec(ANNOUNCER, { ...pod.call, command: 'ADD' }, config);
      expect(add.code, add.stdout).toBe(0);
      expect(await records(pod.dirs.stateDir)).toEqual([`${pod.containerId}@eth0.json`]);
      // ADD started the announcer and returned; it reads the job from the record once it listens.
      const status = await daemonStatus(pod.dirs.stateDir);
      expect(status.attachments.map((a) => [a.containerId, a.ifname, a.roundsSent, a.roundsPlanned])).toEqual([
        [pod.containerId, 'eth0', 1, 3],
      ]);
      expect(await daemonsOf(pod.dirs.stateDir)).toHaveLength(1);
      return config;
    }

    /** DEL succeeded silently, cancelled the background job, removed the record; the idle announcer then exits. */
    async function expectCleanDel(out: CniOutput, pod: ProtocolPod): Promise<void> {
      expect(out.code, out.stdout + out.stderr).toBe(0);
      expect(out.stdout).toBe('');
      expect(await records(pod.dirs.stateDir)).toEqual([]);
      const done = { containerId: pod.containerId, ifname: 'eth0', background: 'cancelled', macsRestored: 'none' };
      expect(await pod.dirs.logged('info', 'DEL done', { ...done, recordRemoved: true })).toHaveLength(1);
      expect((await announcerStatus(pod.dirs.stateDir)).attachments).toEqual([]);
      await waitDaemonGone(pod.dirs.stateDir);
    }

    it('after ADD cancels the background job and removes the record; a second DEL is a silent no-op', async () => {
      const pod = await bridgePod(scope());
      const config = await addWithBackground(pod);
      await expectCleanDel(await cniExec(ANNOUNCER, { ...pod.call, command: 'DEL' }, config), pod);
      const again = await cniExec(ANNOUNCER, { ...pod.call, command: 'DEL' }, config);
      expect([again.code, again.stdout]).toEqual([0, '']);
      expect(await pod.dirs.logged('info', 'DEL: no state record, nothing to undo')).toHaveLength(1);
      // The second DEL went through an announcer it started (every command does): no record, no job there.
      expect(await records(pod.dirs.stateDir)).toEqual([]);
      expect((await announcerStatus(pod.dirs.stateDir)).attachments).toEqual([]);
    });

    it('without CNI_NETNS', async () => {
      const pod = await bridgePod(scope());
      const config = await addWithBackground(pod);
      const { netns: _n, ...call } = pod.call;
      await expectCleanDel(await cniExec(ANNOUNCER, { ...call, command: 'DEL' }, config), pod);
    });

    it('without prevResult', async () => {
      const pod = await bridgePod(scope());
      const { prevResult: _p, ...config } = await addWithBackground(pod);
      await expectCleanDel(await cniExec(ANNOUNCER, { ...pod.call, command: 'DEL' }, config), pod);
    });

    it('after the netns was deleted', async () => {
      const pod = await bridgePod(scope());
      const config = await addWithBackground(pod);
      await runOk('ip', ['netns', 'del', pod.netns.name]);
      await expect(stat(pod.netns.path)).rejects.toThrow(/ENOENT/);
      await expectCleanDel(await cniExec(ANNOUNCER, { ...pod.call, command: 'DEL' }, config), pod);
    });

    it('with nothing recorded (never ADDed) and no netns at all', async () => {
      const dirs = await announcerDirs(scope());
      const out = await cniExec(
        ANNOUNCER,
        { command: 'DEL', containerId: `${PREFIX}-never`, ifname: 'eth0', netns: '/var/run/netns/does-not-exist' },
        { cniVersion: '1.0.0', name: `${PREFIX}-net`, type: 'announcer', stateDir: dirs.stateDir },
      );
      expect([out.code, out.stdout]).toEqual([0, '']);
    });
  });

  describe('bad inputs: exact code, one error object, nothing changed', () => {
    /** What a case changes in the baseline ADD call or its config. */
    type Change = {
      call?: (c: CniCall, pod: ProtocolPod) => CniCall;
      config?: (c: Record<string, unknown>) => Record<string, unknown> | string;
    };
    /** A case: what, code, the error's cniVersion (the config's once read, else 1.1.0), what msg names, the change. */
    type Case = [string, number, string | readonly string[], (pod: ProtocolPod) => string[], Change];
    const ENV = ['1.0.0', '1.1.0'];
    const withIps = (config: Record<string, unknown>, change: (ip: any) => void): Record<string, unknown> => {
      const prevResult = structuredClone(config.prevResult) as any;
      change(prevResult.ips[0]);
      return { ...config, prevResult };
    };
    const noNetns = '/var/run/netns/does-not-exist';
    const file = (pod: ProtocolPod) => join(pod.dirs.dir, 'not-a-netns');
    const cases: Case[] = [
      [
        'unsupported cniVersion 9.9.9',
        1,
        '1.1.0',
        () => ['9.9.9', 'cniVersion'],
        { config: (c) => ({ ...c, cniVersion: '9.9.9' }) },
      ],
      [
        'CHECK on a 0.3.1 config',
        1,
        '0.3.1',
        () => ['CHECK', '0.4.0'],
        { call: (c) => ({ ...c, command: 'CHECK' }), config: (c) => ({ ...c, cniVersion: '0.3.1' }) },
      ],
      [
        'CNI_NETNS path that does not exist',
        3,
        '1.0.0',
        () => ['CNI_NETNS', noNetns],
        { call: (c) => ({ ...c, netns: noNetns }) },
      ],
      ['missing CNI_CONTAINERID', 4, ENV, () => ['CNI_CONTAINERID'], { call: ({ containerId: _c, ...c }) => c }],
      ['missing CNI_IFNAME', 4, ENV, () => ['CNI_IFNAME'], { call: ({ ifname: _i, ...c }) => c }],
      ['unknown CNI_COMMAND', 4, ENV, () => ['CNI_COMMAND', 'FROB'], { call: (c) => ({ ...c, command: 'FROB' }) }],
      [
        "CNI_NETNS = /proc/self/ns/net, the plugin's own netns",
        4,
        '1.0.0',
        () => ['CNI_NETNS', '/proc/self/ns/net', 'own'],
        { call: (c) => ({ ...c, netns: '/proc/self/ns/net' }) },
      ],
      [
        'CNI_NETNS = a regular file',
        4,
        '1.0.0',
        (pod) => ['CNI_NETNS', file(pod), 'not a network namespace'],
        { call: (c, pod) => ({ ...c, netns: file(pod) }) },
      ],
      [
        'CNI_ARGS ANNOUNCE=maybe',
        4,
        ENV,
        () => ['CNI_ARGS', 'ANNOUNCE', 'maybe'],
        { call: (c) => ({ ...c, args: 'IgnoreUnknown=1;ANNOUNCE=maybe' }) },
      ],
      ['stdin not JSON', 6, '1.1.0', () => ['JSON'], { config: () => '{"cniVersion": "1.0.0", nope' }],
      ['no prevResult on ADD', 7, '1.0.0', () => ['prevResult'], { config: ({ prevResult: _p, ...c }) => c }],
      ['count 11', 7, '1.0.0', () => ['"count"', '11'], { config: (c) => ({ ...c, count: 11 }) }],
      ['arpOp "sideways"', 7, '1.0.0', () => ['"arpOp"', 'sideways'], { config: (c) => ({ ...c, arpOp: 'sideways' }) }],
      ['ipv4 "yes"', 7, '1.0.0', () => ['"ipv4"'], { config: (c) => ({ ...c, ipv4: 'yes' }) }],
      [
        'prevResult with a bad CIDR',
        7,
        '1.0.0',
        () => ['prevResult.ips[0].address', '10.88.300.5/24'],
        { config: (c) => withIps(c, (ip) => (ip.address = '10.88.300.5/24')) },
      ],
      [
        'prevResult ips[].interface out of range',
        7,
        '1.0.0',
        () => ['prevResult.ips[0].interface'],
        { config: (c) => withIps(c, (ip) => (ip.interface = 7)) },
      ],
    ];

    it.each(cases)('%s → %i', async (_what, code, cniVersion, mentions, change) => {
      // Settled (the pod's port forwarding, the bridge's carrier on): the snapshot holds what the kernel does on its
      // own, before the call, so that it shows only what the call changed.
      const pod = await bridgePod(scope(), { settle: true });
      await waitFor(async () => (await listLinks()).find((l) => l.ifname === pod.bridge)?.operstate === 'UP', {
        what: `${pod.bridge}'s carrier`,
      });
      await writeFile(join(pod.dirs.dir, 'not-a-netns'), 'just a file\n');
      // A stale entry for the pod's IP: a wrongly successful ADD would repair it.
      await plantStale(pod.bridge, pod.net.v4(5), OLD_MAC);
      const before = await l2Snapshot(pod.bridge, pod.netns.name);

      const baseCall: CniCall = { ...pod.call, command: 'ADD' };
      const baseConfig = chainConfig(pod.mainConf, announcerConf(pod.dirs), pod.result);
      const call = change.call?.(baseCall, pod) ?? baseCall;
      const out = await cniExec(ANNOUNCER, call, change.config?.(baseConfig) ?? baseConfig);

      expectCniError(out, code, mentions(pod), cniVersion);
      expect(await l2Snapshot(pod.bridge, pod.netns.name)).toEqual(before);
      expect(await neighEntry(pod.bridge, pod.net.v4(5))).toMatchObject({ state: 'STALE', mac: OLD_MAC });
      expect(await records(pod.dirs.stateDir)).toEqual([]);
      expect(await processesOf(pod.containerId)).toEqual([]);
      // The shim validates nothing: the announcer it started refused the input and holds no job (stopped at scope
      // close).
      expect((await announcerStatus(pod.dirs.stateDir)).attachments).toEqual([]);
    });

    const sameBaselineCallTitle =
      'the same baseline call, unchanged, succeeds and repairs the entry ' +
      '(the cases above fail for their input alone)';
    it(sameBaselineCallTitle, async () => {
      const pod = await bridgePod(scope());
      await plantStale(pod.bridge, pod.net.v4(5), OLD_MAC);
      const out = await cniExec(
        ANNOUNCER,
        { ...pod.call, command: 'ADD' },
        chainConfig(pod.mainConf, announcerConf(pod.dirs), pod.result),
      );
      expect(out.code, out.stdout).toBe(0);
      expect((await neighEntry(pod.bridge, pod.net.v4(5)))?.mac).toBe(podInterface(pod.result)!.mac);
    });
  });

  describe('VERSION', () => {
    it.each(VERSIONS)('answers %s with the five supported versions', async (version) => {
      const out = await cniExec(ANNOUNCER, { command: 'VERSION' }, { cniVersion: version });
      expect(out.code, out.stdout + out.stderr).toBe(0);
      expect(out.json).toEqual({ cniVersion: version, supportedVersions: [...VERSIONS] });
    });
  });

  describe('STATUS and GC', () => {
    const netConf = (extra: Record<string, unknown>) => ({
      cniVersion: '1.1.0',
      name: `${PREFIX}-net`,
      type: 'announcer',
      ...extra,
    });

    it('STATUS with a writable stateDir exits 0 silently and creates stateDir 0700', async () => {
      const dirs = await announcerDirs(scope());
      const out = await cniExec(ANNOUNCER, { command: 'STATUS' }, netConf({ stateDir: dirs.stateDir }));
      expect([out.code, out.stdout, out.stderr]).toEqual([0, '', '']);
      const st = await stat(dirs.stateDir);
      expect(st.isDirectory()).toBe(true);
      expect(st.mode & 0o777).toBe(0o700);
    });

    it('STATUS with stateDir under a read-only bind mount fails with 50 naming stateDir', async () => {
      const dirs = await announcerDirs(scope());
      const ro = join(dirs.dir, 'ro');
      await mkdir(ro);
      const stateDir = join(ro, 'state');
      // As text: the harness writes no node settings into stateDir (nothing may be created under ro).
      const out = await cniExecInMountNs(ANNOUNCER, { command: 'STATUS' }, JSON.stringify(netConf({ stateDir })), {
        prelude: [
          'mount --bind "$1" "$1"',
          'mount -o remount,bind,ro "$1"',
          'if touch "$1/probe" 2>/dev/null; then echo "$1 is still writable" >&2; exit 97; fi',
        ].join('\n'),
        args: [ro],
      });
      expectCniError(out, 50, ['stateDir', stateDir], '1.1.0');
      expect(await readdir(ro)).toEqual([]);
    });

    // Bug: Node's recursive mkdirSync spins forever when mkdir(2) answers ENOENT under an
    // existing parent, which procfs does; src/commands/status.ts then never returns.
    it('STATUS with stateDir under /proc fails with 50 naming stateDir (and does not hang)', async () => {
      await announcerDirs(scope());
      const stateDir = `/proc/${PREFIX}-nowhere/state`;
      const out = await cniExec(ANNOUNCER, { command: 'STATUS', timeoutMs: 5_000 }, netConf({ stateDir })).catch(
        (e: Error) => e,
      );
      if (out instanceof Error) expect.fail(`STATUS did not answer: ${out.message}`);
      expectCniError(out, 50, ['stateDir', stateDir], '1.1.0');
    });

    it('GC with an empty attachment list and nothing recorded exits 0 silently', async () => {
      const dirs = await announcerDirs(scope());
      const out = await cniExec(
        ANNOUNCER,
        { command: 'GC' },
        netConf({ stateDir: dirs.stateDir, 'cni.dev/valid-attachments': [] }),
      );
      expect([out.code, out.stdout, out.stderr]).toEqual([0, '', '']);
      expect(await records(dirs.stateDir)).toEqual([]);
    });
  });
});
