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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  neighEntry,
  OLD_MAC,
  ownAnnouncerProcesses,
  plantStale,
  readLog,
  logRecords,
  RUN_TAG,
  Scope,
  scopePerTest,
  stateFiles,
  throwCleanupErrors,
  waitFor,
} from './harness';
import { skipContainerd, type PrivateContainerd } from './harness/containerd';
import { announcerStatus, daemonsOf, waitDaemonGone } from './harness/daemon';
import { criBridge, POD_HOST, type CriBridge } from './harness/cri-bridge';
import { pidsWithArgv } from './harness/proc-tree';

const PREFIX = `cri${RUN_TAG}`;

describe.skipIf(skipContainerd())('containerd 1.6 CRI with the conflist bridge + announcer', () => {
  const scope = new Scope();
  const perTest = scopePerTest(PREFIX);
  let cri: CriBridge;
  let ctd: PrivateContainerd;
  let bridge: string;
  let stateDir: string;
  let logFile: string;
  let podIp: string;

  beforeAll(async () => {
    // Round 2 a minute after round 1: the background announcer still holds the job when the pod goes,
    // so it is gone by then only if DEL cancelled the job; idleExitMs small: it exits soon after.
    cri = await criBridge(scope, PREFIX, {
      announcer: (files) => ({
        type: 'announcer',
        ...files,
        logLevel: 'debug',
        count: 2,
        intervalMs: 60_000,
        idleExitMs: 300,
      }),
      control: null,
    });
    ({ ctd, bridge, stateDir, logFile } = cri);
    podIp = cri.net.v4(POD_HOST);
  }, 120_000);

  afterAll(async () => {
    throwCleanupErrors(await scope.close());
    // containerd, its shims and the background announcer all name the temp dir in their argv.
    if (cri !== undefined) expect(await pidsWithArgv((argv) => argv.some((a) => a.includes(cri.dir)))).toEqual([]);
  }, 120_000);

  const controlBridgeAloneTitle =
    'control, bridge alone: when RunPodSandbox returns, the node still ' +
    "holds the departed pod's MAC for the reused IP";
  it(controlBridgeAloneTitle, async () => {
    const s = perTest();
    await plantStale(bridge, podIp, OLD_MAC);
    const id = await cri.runPod(s, 'control');
    const entry = await neighEntry(bridge, podIp);
    expect(await cri.podMac(id)).not.toBe(OLD_MAC);
    expect(entry).toMatchObject({ state: 'STALE', mac: OLD_MAC });
  });

  const bridgeAnnouncerWhenTitle =
    "bridge + announcer: when RunPodSandbox returns, the node's entry for the reused IP holds the new pod's MAC";
  it(bridgeAnnouncerWhenTitle, async () => {
    const s = perTest();
    await plantStale(bridge, podIp, OLD_MAC);
    const id = await cri.runPod(s, 'announcer');
    const entry = await neighEntry(bridge, podIp);
    // The stateDir's announcer (its first command) ran the pod's ADD: the CNI process containerd ran did not.
    expect((await announcerStatus(stateDir)).counters?.served).toMatchObject({ ADD: 1 });
    const mac = await cri.podMac(id);
    expect(mac).not.toBe(OLD_MAC);
    expect(entry?.mac).toBe(mac);
  });

  const stopPodSandboxThenRemovePodSandboxTitle =
    'StopPodSandbox then RemovePodSandbox: both DELs succeed, the second after the ' +
    'netns is gone, and the log holds no warning or error';
  it(stopPodSandboxThenRemovePodSandboxTitle, async () => {
    const s = perTest();
    const id = await cri.runPod(s, 'announcer');
    await ctd.cri.stopPodSandbox(id);
    expect((await ctd.cri.podSandboxStatus(id)).status.state).toBe('SANDBOX_NOTREADY');
    expect(await ctd.netnsFiles()).toEqual([]);
    await ctd.cri.removePodSandbox(id);

    const records = logRecords(await readLog(logFile)).filter((r) => r.fields.containerId === id);
    expect(records.filter((r) => r.level === 'warn' || r.level === 'error')).toEqual([]);
    const dels = records.filter((r) => r.level === 'info' && r.msg.startsWith('DEL'));
    expect(dels.map((r) => [r.msg, r.fields.recordRemoved])).toEqual([
      ['DEL done', true],
      ['DEL: no state record, nothing to undo', undefined],
    ]);
  });

  const afterRemovePodSandboxNothingTitle =
    'after RemovePodSandbox nothing of the pod is left: no record or lock, ' +
    'netns, veth, announcer process or sandbox';
  it(afterRemovePodSandboxNothingTitle, async () => {
    const s = perTest();
    const id = await cri.runPod(s, 'announcer');
    // What is checked below, seen while the pod runs.
    expect(await stateFiles(stateDir)).toContain(`${id}@eth0.json`);
    expect(await daemonsOf(stateDir)).toHaveLength(1);
    expect(await ctd.netnsMounts()).toHaveLength(1);
    expect(await ctd.netnsFiles()).toHaveLength(1);
    expect(await cri.podPorts()).toHaveLength(1);
    expect(await ctd.cgroups()).toContain(`pids${ctd.cgroupParent}/${id}`);
    await ctd.cri.stopPodSandbox(id);
    await ctd.cri.removePodSandbox(id);

    await waitDaemonGone(stateDir);
    expect(await stateFiles(stateDir)).toEqual([]);
    expect(await ctd.netnsMounts()).toEqual([]);
    expect(await ctd.netnsFiles()).toEqual([]);
    expect(await cri.podPorts()).toEqual([]);
    expect(await ownAnnouncerProcesses()).toEqual([]);
    expect(await ctd.cri.listPodSandbox()).toEqual([]);
    expect(await ctd.cgroups()).toEqual([]);
    // The sandbox's shim exits once its last task is deleted.
    await waitFor(async () => (await ctd.shims()).length === 0, { what: 'the shim to exit' }).catch(() => undefined);
    expect(await ctd.shims()).toEqual([]);
  });
});
