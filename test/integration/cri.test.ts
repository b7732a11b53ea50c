// A real Kubernetes runtime: containerd 1.6's CRI plugin runs the conflist
// bridge + announcer, driven through the CRI API as the kubelet drives it
// (harness/containerd.ts, harness/cri-client.ts). A private containerd has two
// runtime handlers, each with a CNI conf dir of its own: `announcer` (bridge,
// then the announcer) and `control` (the bridge alone). Both give the pod the
// same static address on one bridge, which a keeper pod holds up (without
// carrier the kernel would flush the bridge's neighbour entries).
//
// The stale-entry scenario of the README through CRI: the node's entry for
// the pod IP is planted STALE with a departed pod's MAC; when RunPodSandbox
// returns it holds the new pod's MAC with the announcer, and still the old
// one with the bridge alone. containerd runs DEL twice per pod: on
// StopPodSandbox, and on RemovePodSandbox after the netns is gone. Both
// succeed without an error in the announcer's log, and afterwards nothing of
// the pod is left: no record, netns, veth, announcer process or sandbox.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANNOUNCER,
  allocSubnet,
  killStrays,
  bridgeWithKeeper,
  neighEntry,
  OLD_MAC,
  ownAnnouncerProcesses,
  plantStale,
  readLog,
  RUN_TAG,
  runOk,
  Scope,
  scopePerTest,
  stateFiles,
  SYSTEM_CNI_DIR,
  throwCleanupErrors,
  waitFor,
  type Subnet,
  stopDaemonAtClose,
} from './harness';
import { privateContainerd, skipContainerd, type PrivateContainerd } from './harness/containerd';
import { daemonsOf, waitDaemonGone } from './harness/daemon';
import { buildPauseImage } from './harness/oci-image';
import { pidsWithArgv } from './harness/proc-tree';

const PREFIX = `cri${RUN_TAG}`;
const SANDBOX_IMAGE = 'localhost/announcer-test-pause:1';
/** The pod's host number in the subnet; the keeper is 9, the node 1. */
const POD_HOST = 5;

describe.skipIf(skipContainerd())('containerd 1.6 CRI with the conflist bridge + announcer', () => {
  const scope = new Scope();
  const perTest = scopePerTest(PREFIX);
  let ctd: PrivateContainerd;
  let net: Subnet;
  let bridge: string;
  let stateDir: string;
  let logFile: string;
  let podIp: string;
  let pods = 0;
  let dir: string;
  let keeperPorts: string[];

  beforeAll(async () => {
    net = allocSubnet();
    podIp = net.v4(POD_HOST);
    bridge = await bridgeWithKeeper(scope, net, { prefix: PREFIX });
    // Runs after containerd is gone: a background announcer whose pod never got its DEL (a failed run).
    killStrays(scope);
    keeperPorts = await ports();
    dir = await mkdtemp(join(tmpdir(), 'announcer-cri-'));
    scope.defer(() => rm(dir, { recursive: true, force: true }), `containerd dir ${dir}`);
    stateDir = join(dir, 'announcer-state');
    logFile = join(dir, 'announcer.log');
    // After containerd (and the DELs it makes) is gone: every command leaves the announcer of stateDir running.
    stopDaemonAtClose(scope, stateDir);
    const bridgeConf = {
      type: 'bridge',
      bridge,
      isGateway: false,
      ipMasq: false,
      ipam: { type: 'static', addresses: [{ address: net.v4Cidr(POD_HOST), gateway: net.v4(1) }] },
    };
    // Round 2 a minute after round 1: the background announcer still holds the job when the pod goes,
    // so it is gone by then only if DEL cancelled the job; idleExitMs small: it exits soon after.
    const announcerConf = { type: 'announcer', stateDir, logFile, logLevel: 'debug', count: 2, intervalMs: 60_000, idleExitMs: 300 };
    const imageDir = join(dir, 'image');
    ctd = await privateContainerd(scope, {
      dir,
      networks: [
        { handler: 'announcer', conflist: { cniVersion: '1.0.0', name: `${PREFIX}-ann`, plugins: [bridgeConf, announcerConf] } },
        { handler: 'control', conflist: { cniVersion: '1.0.0', name: `${PREFIX}-ctl`, plugins: [bridgeConf] } },
      ],
      sandboxImage: { name: SANDBOX_IMAGE, archive: await buildPauseImage(imageDir, SANDBOX_IMAGE) },
      plugins: {
        announcer: ANNOUNCER,
        ...Object.fromEntries(['bridge', 'static', 'loopback'].map((p) => [p, join(SYSTEM_CNI_DIR, p)])),
      },
    });
  }, 120_000);

  afterAll(async () => {
    throwCleanupErrors(await scope.close());
    // containerd, its shims and the background announcer all name the temp dir in their argv.
    if (dir !== undefined) expect(await pidsWithArgv((argv) => argv.some((a) => a.includes(dir)))).toEqual([]);
  }, 120_000);

  /** RunPodSandbox through `handler`; the sandbox is stopped and removed at scope close. Resolves with its ID. */
  async function runPod(s: Scope, handler: 'announcer' | 'control'): Promise<string> {
    pods += 1;
    const metadata = { name: `pod-${pods}`, uid: `${PREFIX}-uid-${pods}`, namespace: PREFIX };
    const id = await ctd.cri.runPodSandbox({ metadata, hostname: metadata.name, linux: { cgroupParent: ctd.cgroupParent } }, handler);
    s.defer(async () => {
      // A test may have removed it already; StopPodSandbox of an unknown sandbox is an error.
      if (!(await ctd.cri.listPodSandbox()).some((p) => p.id === id)) return;
      await ctd.cri.stopPodSandbox(id);
      await ctd.cri.removePodSandbox(id);
    }, `pod sandbox ${id}`);
    return id;
  }

  /** The pod's eth0 MAC, read inside its netns (through the sandbox process, pid from the verbose status). */
  async function podMac(id: string): Promise<string> {
    const { info } = await ctd.cri.podSandboxStatus(id, true);
    const pid = (JSON.parse(info.info ?? '{}') as { pid?: number }).pid;
    if (!pid) throw new Error(`no sandbox pid in the status of ${id}`);
    const { stdout } = await runOk('nsenter', [`--net=/proc/${pid}/ns/net`, '--', 'ip', '-j', 'link', 'show', 'eth0']);
    return (JSON.parse(stdout) as { address: string }[])[0]!.address;
  }

  /** The bridge's ports. */
  async function ports(): Promise<string[]> {
    return (JSON.parse((await runOk('ip', ['-j', 'link', 'show', 'master', bridge])).stdout) as { ifname: string }[]).map((p) => p.ifname);
  }

  /** The bridge's ports other than the keeper's veth. */
  async function podPorts(): Promise<string[]> {
    return (await ports()).filter((p) => !keeperPorts.includes(p));
  }

  it('control, bridge alone: when RunPodSandbox returns, the node still holds the departed pod\'s MAC for the reused IP', async () => {
    const s = perTest();
    await plantStale(bridge, podIp, OLD_MAC);
    const id = await runPod(s, 'control');
    const entry = await neighEntry(bridge, podIp);
    expect(await podMac(id)).not.toBe(OLD_MAC);
    expect(entry).toMatchObject({ state: 'STALE', mac: OLD_MAC });
  });

  it('bridge + announcer: when RunPodSandbox returns, the node\'s entry for the reused IP holds the new pod\'s MAC', async () => {
    const s = perTest();
    await plantStale(bridge, podIp, OLD_MAC);
    const id = await runPod(s, 'announcer');
    const entry = await neighEntry(bridge, podIp);
    const mac = await podMac(id);
    expect(mac).not.toBe(OLD_MAC);
    expect(entry?.mac).toBe(mac);
  });

  it('StopPodSandbox then RemovePodSandbox: both DELs succeed, the second after the netns is gone, and the log holds no warning or error', async () => {
    const s = perTest();
    const id = await runPod(s, 'announcer');
    await ctd.cri.stopPodSandbox(id);
    expect((await ctd.cri.podSandboxStatus(id)).status.state).toBe('SANDBOX_NOTREADY');
    expect(await ctd.netnsFiles()).toEqual([]);
    await ctd.cri.removePodSandbox(id);

    const lines = (await readLog(logFile)).split('\n').filter((l) => l.includes(`containerId=${id}`));
    expect(lines.filter((l) => / (WARN|ERROR) /.test(l))).toEqual([]);
    const dels = lines.filter((l) => / INFO DEL/.test(l));
    expect(dels).toHaveLength(2);
    expect(dels[0]).toMatch(/DEL done .*recordRemoved=true/);
    expect(dels[1]).toMatch(/no state record, nothing to undo/);
  });

  it('after RemovePodSandbox nothing of the pod is left: no record or lock, netns, veth, announcer process or sandbox', async () => {
    const s = perTest();
    const id = await runPod(s, 'announcer');
    // What is checked below, seen while the pod runs.
    expect(await stateFiles(stateDir)).toContain(`${id}@eth0.json`);
    expect(await daemonsOf(stateDir)).toHaveLength(1);
    expect(await ctd.netnsMounts()).toHaveLength(1);
    expect(await ctd.netnsFiles()).toHaveLength(1);
    expect(await podPorts()).toHaveLength(1);
    expect(await ctd.cgroups()).toContain(`pids${ctd.cgroupParent}/${id}`);
    await ctd.cri.stopPodSandbox(id);
    await ctd.cri.removePodSandbox(id);

    await waitDaemonGone(stateDir);
    expect(await stateFiles(stateDir)).toEqual([]);
    expect(await ctd.netnsMounts()).toEqual([]);
    expect(await ctd.netnsFiles()).toEqual([]);
    expect(await podPorts()).toEqual([]);
    expect(await ownAnnouncerProcesses()).toEqual([]);
    expect(await ctd.cri.listPodSandbox()).toEqual([]);
    expect(await ctd.cgroups()).toEqual([]);
    // The sandbox's shim exits once its last task is deleted.
    await waitFor(async () => (await ctd.shims()).length === 0, { what: 'the shim to exit' }).catch(() => undefined);
    expect(await ctd.shims()).toEqual([]);
  });
});
