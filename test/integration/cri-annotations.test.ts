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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  describeFrames,
  garpsFor,
  readLog,
  logRecords,
  type LogRecord,
  RUN_TAG,
  Scope,
  scopePerTest,
  startCapture,
  stateFiles,
  throwCleanupErrors,
  type Subnet,
} from './harness';
import { skipContainerd, type PrivateContainerd } from './harness/containerd';
import { announcerStatus, waitDaemonGone } from './harness/daemon';
import { criBridge, POD_HOST, type CriBridge } from './harness/cri-bridge';
import { pidsWithArgv } from './harness/proc-tree';

const PREFIX = `cra${RUN_TAG}`;
const ANNOTATION = 'cni-announcer/announce';
const ANNOTATION_NAME = 'runtimeConfig["io.kubernetes.cri.pod-annotations"]["cni-announcer/announce"]';

describe.skipIf(skipContainerd())(
  'containerd 1.6 CRI: per-pod control from the pod annotation cni-announcer/announce',
  () => {
    const scope = new Scope();
    const perTest = scopePerTest(PREFIX);
    let cri: CriBridge;
    let ctd: PrivateContainerd;
    let net: Subnet;
    let bridge: string;
    let stateDir: string;
    let logFile: string;

    beforeAll(async () => {
      const announcerConf = (files: { stateDir: string; logFile: string }): Record<string, unknown> => ({
        type: 'announcer',
        capabilities: { 'io.kubernetes.cri.pod-annotations': true },
        ...files,
        logLevel: 'debug',
        ipv6: false,
        arpOp: 'reply',
        count: 4,
        intervalMs: 100,
        idleExitMs: 300,
        podOverrides: ['enabled=false', 'mac=keep', 'count'],
      });
      cri = await criBridge(scope, PREFIX, {
        annotated: announcerConf,
        // The same entry without the capability: the operator has not opened the channel.
        undeclared: (files) => {
          const { capabilities: _declared, ...undeclared } = announcerConf(files);
          return undeclared;
        },
      });
      ({ ctd, net, bridge, stateDir, logFile } = cri);
    }, 120_000);

    afterAll(async () => {
      throwCleanupErrors(await scope.close());
      if (cri !== undefined) expect(await pidsWithArgv((argv) => argv.some((a) => a.includes(cri.dir)))).toEqual([]);
    }, 120_000);

    /**
     * Runs a pod with `annotations` under a capture of the bridge; resolves, once its burst is over, with the
     * announcer's replies for the pod IP.
     */
    async function announcedReplies(annotations: Record<string, string>, handler = 'annotated') {
      const s = perTest();
      const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
      const id = await cri.runPod(s, handler, annotations);
      // Taken while the burst runs (the announcer stays idleExitMs after it): who ran the ADD.
      const served = (await announcerStatus(stateDir)).counters?.served;
      const mac = await cri.podMac(id);
      await waitDaemonGone(stateDir);
      const frames = await capture.stop();
      const replies = garpsFor(frames, mac, net.v4(POD_HOST)).filter((f) => f.arp?.opcode === 2);
      return { id, frames, replies, served };
    }

    /** The announcer's log records about container `id`. */
    async function logOf(id: string): Promise<LogRecord[]> {
      return logRecords(await readLog(logFile)).filter((r) => r.fields.containerId === id);
    }

    it("control, no annotation: the conflist's 4 rounds", async () => {
      const { replies, frames, served } = await announcedReplies({});
      expect(replies, describeFrames(frames)).toHaveLength(4);
      // The stateDir's announcer ran the pod's ADD: the CNI process containerd ran did not.
      expect(served?.ADD).toBe(1);
    });

    const falseNoFrameTitle =
      '"false": no frame from the announcer, and the log names the annotation as the one who turned it off';
    it(falseNoFrameTitle, async () => {
      const { id, replies, frames } = await announcedReplies({ [ANNOTATION]: 'false', 'other/annotation': 'x' });
      expect(replies, describeFrames(frames)).toEqual([]);
      const off = (await logOf(id)).filter((r) => r.msg === 'announcing turned off for this attachment');
      expect(off.map((r) => [r.level, r.fields.by])).toEqual([['info', expect.stringContaining(ANNOTATION)]]);
    });

    it('{"count":2}, which podOverrides allows: 2 rounds', async () => {
      const { replies, frames } = await announcedReplies({ [ANNOTATION]: '{"count":2}' });
      expect(replies, describeFrames(frames)).toHaveLength(2);
    });

    it('without the capability in the conflist entry, "false" changes nothing: the conflist\'s 4 rounds', async () => {
      const { id, replies, frames } = await announcedReplies({ [ANNOTATION]: 'false' }, 'undeclared');
      expect(replies, describeFrames(frames)).toHaveLength(4);
      // Not even logged as undeclared: containerd did not send it.
      const named = (await logOf(id)).filter((r) =>
        /announcing turned off|cni-announcer\/announce/.test(JSON.stringify(r)),
      );
      expect(named).toEqual([]);
    });

    it.each([
      ['{"count":', `${ANNOTATION_NAME} is not JSON`],
      ['{"count":11}', `${ANNOTATION_NAME}: "count" must be an integer from 0 to 10 (got 11)`],
      ['{"cuont":2}', `${ANNOTATION_NAME}: "cuont" is not an option a pod may set`],
    ])(
      "%s: RunPodSandbox fails with the announcer's code-7 message naming the annotation, and nothing of " +
        'the pod is left',
      async (value, message) => {
        const s = perTest();
        const failed = (e: Error) => e;
        const error = await cri.runPod(s, 'annotated', { [ANNOTATION]: value }).then(() => undefined, failed);
        expect(error?.message).toContain('invalid config: ');
        expect(error?.message).toContain(message);
        expect(await ctd.cri.listPodSandbox()).toEqual([]);
        expect(await cri.podPorts()).toEqual([]);
        // No record. (The announcer this ADD started stays for the default idleExitMs: the config it
        // came with was refused, so its idleExitMs was never read; stopDaemonAtClose ends it.)
        expect(await stateFiles(stateDir)).toEqual([]);
      },
    );
  },
);
