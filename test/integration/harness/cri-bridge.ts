// A private containerd (containerd.ts) whose runtime handlers each run a conflist
// of the bridge plugin (a static address on one bridge that a keeper holds up)
// and, where given, an announcer entry: what cri.test.ts and cri-annotations.test.ts
// share. Pods are run through the CRI as the kubelet runs them, and stopped and
// removed at the scope's close.
import { join } from 'node:path';
import { stopDaemonAtClose, tempDir } from './announcer-files';
import { bridgeWithKeeper } from './bridge-pods';
import { ANNOUNCER, moveNodeOptions, SYSTEM_CNI_DIR } from './cni';
import { runOk } from './exec';
import { allocSubnet, type Subnet } from './names';
import { killStrays } from './processes';
import type { Scope } from './scope';
import { privateContainerd, type PrivateContainerd } from './containerd';
import { buildPauseImage } from './oci-image';

const SANDBOX_IMAGE = 'localhost/announcer-test-pause:1';

/** The pod's host number in the subnet; the keeper is 9, the node 1. */
export const POD_HOST = 5;

/** A containerd with bridge (+ announcer) handlers, and what a test asks of it. */
export interface CriBridge {
  ctd: PrivateContainerd;
  net: Subnet;
  bridge: string;
  /**
   * The temporary dir of containerd, the announcer's stateDir and log (every process of the test names it in its argv).
   */
  dir: string;
  stateDir: string;
  logFile: string;
  /**
   * RunPodSandbox through `handler`, with `annotations`; the sandbox is stopped and removed at the close of `s`.
   * Resolves with its ID.
   */
  runPod(s: Scope, handler: string, annotations?: Record<string, string>): Promise<string>;
  /** The bridge's ports other than the keeper's. */
  podPorts(): Promise<string[]>;
  /** The pod's eth0 MAC, read inside its netns (through the sandbox process, pid from the verbose status). */
  podMac(id: string): Promise<string>;
}

/**
 * Starts it: one handler per entry of `announcers` (null: the bridge alone), each entry made by
 * `announcer(stateDir, logFile)`; pods get `prefix`'s names.
 */
export async function criBridge(
  scope: Scope,
  prefix: string,
  announcers: Record<string, ((files: { stateDir: string; logFile: string }) => object) | null>,
): Promise<CriBridge> {
  const net = allocSubnet();
  const bridge = await bridgeWithKeeper(scope, net, { prefix });
  // Runs after containerd is gone: a background announcer whose pod never got its DEL (a failed run).
  killStrays(scope);
  const ports = async (): Promise<string[]> =>
    (JSON.parse((await runOk('ip', ['-j', 'link', 'show', 'master', bridge])).stdout) as { ifname: string }[]).map(
      (p) => p.ifname,
    );
  const keeperPorts = await ports();
  const dir = await tempDir(scope, `announcer-${prefix}-`);
  const files = { stateDir: join(dir, 'announcer-state'), logFile: join(dir, 'announcer.log') };
  // After containerd (and the DELs it makes) is gone: every command leaves the announcer of stateDir running.
  stopDaemonAtClose(scope, files.stateDir);
  const bridgeConf = {
    type: 'bridge',
    bridge,
    isGateway: false,
    ipMasq: false,
    ipam: { type: 'static', addresses: [{ address: net.v4Cidr(POD_HOST), gateway: net.v4(1) }] },
  };
  const ctd = await privateContainerd(scope, {
    dir,
    networks: Object.entries(announcers).map(([handler, announcer]) => ({
      handler,
      conflist: {
        cniVersion: '1.0.0',
        name: `${prefix}-${handler}`,
        plugins: announcer ? [bridgeConf, moveNodeOptions(announcer(files) as Record<string, unknown>)] : [bridgeConf],
      },
    })),
    sandboxImage: { name: SANDBOX_IMAGE, archive: await buildPauseImage(join(dir, 'image'), SANDBOX_IMAGE) },
    plugins: {
      announcer: ANNOUNCER,
      ...Object.fromEntries(['bridge', 'static', 'loopback'].map((p) => [p, join(SYSTEM_CNI_DIR, p)])),
    },
  });
  let pods = 0;
  return {
    ctd,
    net,
    bridge,
    dir,
    ...files,
    async runPod(s, handler, annotations) {
      pods += 1;
      const metadata = { name: `pod-${pods}`, uid: `${prefix}-uid-${pods}`, namespace: prefix };
      const config = {
        metadata,
        hostname: metadata.name,
        ...(annotations ? { annotations } : {}),
        linux: { cgroupParent: ctd.cgroupParent },
      };
      const id = await ctd.cri.runPodSandbox(config, handler);
      s.defer(async () => {
        // A test may have removed it already; StopPodSandbox of an unknown sandbox is an error.
        if (!(await ctd.cri.listPodSandbox()).some((p) => p.id === id)) return;
        await ctd.cri.stopPodSandbox(id);
        await ctd.cri.removePodSandbox(id);
      }, `pod sandbox ${id}`);
      return id;
    },
    podPorts: async () => (await ports()).filter((p) => !keeperPorts.includes(p)),
    async podMac(id) {
      const { info } = await ctd.cri.podSandboxStatus(id, true);
      const pid = (JSON.parse(info.info ?? '{}') as { pid?: number }).pid;
      if (!pid) throw new Error(`no sandbox pid in the status of ${id}`);
      const eth0 = ['ip', '-j', 'link', 'show', 'eth0'];
      const { stdout } = await runOk('nsenter', [`--net=/proc/${pid}/ns/net`, '--', ...eth0]);
      return (JSON.parse(stdout) as { address: string }[])[0]!.address;
    },
  };
}
