// Per-pod control through containerd 1.6's CRI, as on a cluster's primary
// network without Multus: the conflist entry declares the capability
// `io.kubernetes.cri.pod-annotations`, containerd puts the pod's annotations
// into runtimeConfig, and the announcer reads `cni-announcer/announce` under
// podOverrides. RunPodSandbox carries the annotation, as the kubelet sends a
// pod's metadata.annotations.
//
// The announcer's frames are told from the kernel's by their form: the
// conflist says `arpOp: reply` (podOverrides does not let a pod change it),
// while the kernel's own arp_notify GARP, which the bridge plugin turns on, is a
// request. The conflist's count is 4, so a count of 2 can only come from the
// annotation. A burst is over once the stateDir's background announcer has
// exited (idleExitMs after its last round); then the capture is complete.
// A second handler runs the same entry without the capability: there the
// annotation changes nothing (containerd sends no annotations to it; were a
// runtime to send them anyway, the announcer ignores them, see the unit tests).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  allocSubnet,
  ANNOUNCER,
  bridgeWithKeeper,
  describeFrames,
  garpsFor,
  killStrays,
  readLog,
  RUN_TAG,
  runOk,
  Scope,
  scopePerTest,
  startCapture,
  stateFiles,
  stopDaemonAtClose,
  SYSTEM_CNI_DIR,
  throwCleanupErrors,
  type Frame,
  type Subnet,
} from './harness';
import { privateContainerd, skipContainerd, type PrivateContainerd } from './harness/containerd';
import { waitDaemonGone } from './harness/daemon';
import { buildPauseImage } from './harness/oci-image';
import { pidsWithArgv } from './harness/proc-tree';

const PREFIX = `cra${RUN_TAG}`;
const SANDBOX_IMAGE = 'localhost/announcer-test-pause:1';
const POD_HOST = 5;
const ANNOTATION = 'cni-announcer/announce';
const ANNOTATION_NAME = 'runtimeConfig["io.kubernetes.cri.pod-annotations"]["cni-announcer/announce"]';

describe.skipIf(skipContainerd())('containerd 1.6 CRI: per-pod control from the pod annotation cni-announcer/announce', () => {
  const scope = new Scope();
  const perTest = scopePerTest(PREFIX);
  let ctd: PrivateContainerd;
  let net: Subnet;
  let bridge: string;
  let stateDir: string;
  let logFile: string;
  let pods = 0;
  let dir: string;
  let keeperPorts: string[];

  beforeAll(async () => {
    net = allocSubnet();
    bridge = await bridgeWithKeeper(scope, net, { prefix: PREFIX });
    killStrays(scope);
    keeperPorts = await ports();
    dir = await mkdtemp(join(tmpdir(), 'announcer-cra-'));
    scope.defer(() => rm(dir, { recursive: true, force: true }), `containerd dir ${dir}`);
    stateDir = join(dir, 'announcer-state');
    logFile = join(dir, 'announcer.log');
    stopDaemonAtClose(scope, stateDir);
    const bridgeConf = {
      type: 'bridge',
      bridge,
      isGateway: false,
      ipMasq: false,
      ipam: { type: 'static', addresses: [{ address: net.v4Cidr(POD_HOST), gateway: net.v4(1) }] },
    };
    const announcerConf = {
      type: 'announcer',
      capabilities: { 'io.kubernetes.cri.pod-annotations': true },
      stateDir,
      logFile,
      logLevel: 'debug',
      ipv6: false,
      arpOp: 'reply',
      count: 4,
      intervalMs: 100,
      idleExitMs: 300,
      podOverrides: ['enabled=false', 'mac=keep', 'count'],
    };
    // The same entry without the capability: the operator has not opened the channel.
    const { capabilities: _declared, ...undeclaredConf } = announcerConf;
    ctd = await privateContainerd(scope, {
      dir,
      networks: [
        { handler: 'annotated', conflist: { cniVersion: '1.0.0', name: `${PREFIX}-ann`, plugins: [bridgeConf, announcerConf] } },
        { handler: 'undeclared', conflist: { cniVersion: '1.0.0', name: `${PREFIX}-und`, plugins: [bridgeConf, undeclaredConf] } },
      ],
      sandboxImage: { name: SANDBOX_IMAGE, archive: await buildPauseImage(join(dir, 'image'), SANDBOX_IMAGE) },
      plugins: {
        announcer: ANNOUNCER,
        ...Object.fromEntries(['bridge', 'static', 'loopback'].map((p) => [p, join(SYSTEM_CNI_DIR, p)])),
      },
    });
  }, 120_000);

  afterAll(async () => {
    throwCleanupErrors(await scope.close());
    if (dir !== undefined) expect(await pidsWithArgv((argv) => argv.some((a) => a.includes(dir)))).toEqual([]);
  }, 120_000);

  /** RunPodSandbox with `annotations`; the sandbox is stopped and removed at scope close. Resolves with its ID. */
  async function runPod(s: Scope, annotations: Record<string, string>, handler = 'annotated'): Promise<string> {
    pods += 1;
    const metadata = { name: `pod-${pods}`, uid: `${PREFIX}-uid-${pods}`, namespace: PREFIX };
    const config = { metadata, hostname: metadata.name, annotations, linux: { cgroupParent: ctd.cgroupParent } };
    const id = await ctd.cri.runPodSandbox(config, handler);
    s.defer(async () => {
      if (!(await ctd.cri.listPodSandbox()).some((p) => p.id === id)) return;
      await ctd.cri.stopPodSandbox(id);
      await ctd.cri.removePodSandbox(id);
    }, `pod sandbox ${id}`);
    return id;
  }

  async function ports(): Promise<string[]> {
    return (JSON.parse((await runOk('ip', ['-j', 'link', 'show', 'master', bridge])).stdout) as { ifname: string }[]).map((p) => p.ifname);
  }

  async function podPorts(): Promise<string[]> {
    return (await ports()).filter((p) => !keeperPorts.includes(p));
  }

  /** The pod's eth0 MAC, read inside its netns (pid from the verbose status). */
  async function podMac(id: string): Promise<string> {
    const { info } = await ctd.cri.podSandboxStatus(id, true);
    const pid = (JSON.parse(info.info ?? '{}') as { pid?: number }).pid;
    if (!pid) throw new Error(`no sandbox pid in the status of ${id}`);
    const { stdout } = await runOk('nsenter', [`--net=/proc/${pid}/ns/net`, '--', 'ip', '-j', 'link', 'show', 'eth0']);
    return (JSON.parse(stdout) as { address: string }[])[0]!.address;
  }

  /** Runs a pod with `annotations` under a capture of the bridge; resolves, once its burst is over, with the announcer's replies for the pod IP. */
  async function announcedReplies(annotations: Record<string, string>, handler?: string): Promise<{ id: string; replies: Frame[]; frames: Frame[] }> {
    const s = perTest();
    const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
    const id = await runPod(s, annotations, handler);
    const mac = await podMac(id);
    await waitDaemonGone(stateDir);
    const frames = await capture.stop();
    return { id, frames, replies: garpsFor(frames, mac, net.v4(POD_HOST)).filter((f) => f.arp?.opcode === 2) };
  }

  /** The announcer's log lines about container `id`. */
  async function logOf(id: string): Promise<string[]> {
    return (await readLog(logFile)).split('\n').filter((l) => l.includes(`containerId=${id}`));
  }

  it('control, no annotation: the conflist\'s 4 rounds', async () => {
    const { replies, frames } = await announcedReplies({});
    expect(replies, describeFrames(frames)).toHaveLength(4);
  });

  it('"false": no frame from the announcer, and the log names the annotation as the one who turned it off', async () => {
    const { id, replies, frames } = await announcedReplies({ [ANNOTATION]: 'false', 'other/annotation': 'x' });
    expect(replies, describeFrames(frames)).toEqual([]);
    const off = (await logOf(id)).filter((l) => l.includes('announcing turned off for this attachment'));
    expect(off).toHaveLength(1);
    expect(off[0]).toContain('cni-announcer/announce');
  });

  it('{"count":2}, which podOverrides allows: 2 rounds', async () => {
    const { replies, frames } = await announcedReplies({ [ANNOTATION]: '{"count":2}' });
    expect(replies, describeFrames(frames)).toHaveLength(2);
  });

  it('without the capability in the conflist entry, "false" changes nothing: the conflist\'s 4 rounds', async () => {
    const { id, replies, frames } = await announcedReplies({ [ANNOTATION]: 'false' }, 'undeclared');
    expect(replies, describeFrames(frames)).toHaveLength(4);
    // Not even logged as undeclared: containerd did not send it.
    expect((await logOf(id)).filter((l) => l.includes('announcing turned off') || l.includes('cni-announcer/announce'))).toEqual([]);
  });

  it.each([
    ['{"count":', `${ANNOTATION_NAME} is not JSON`],
    ['{"count":11}', `${ANNOTATION_NAME}: "count" must be an integer from 0 to 10 (got 11)`],
    ['{"cuont":2}', `${ANNOTATION_NAME}: "cuont" is not an option a pod may set`],
  ])('%s: RunPodSandbox fails with the announcer\'s code-7 message naming the annotation, and nothing of the pod is left', async (value, message) => {
    const s = perTest();
    const run = runPod(s, { [ANNOTATION]: value });
    const error = await run.then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toContain('invalid config: ');
    expect(error?.message).toContain(message);
    expect(await ctd.cri.listPodSandbox()).toEqual([]);
    expect(await podPorts()).toEqual([]);
    // No record. (The announcer this ADD started stays for the default idleExitMs: the config it
    // came with was refused, so its idleExitMs was never read; stopDaemonAtClose ends it.)
    expect(await stateFiles(stateDir)).toEqual([]);
  });
});
