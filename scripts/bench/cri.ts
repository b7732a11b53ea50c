// make bench-cri: the budget for many pods started together through a
// real Kubernetes runtime. The integration harness's private containerd 1.6
// (its CRI plugin, as the kubelet drives it) has two runtime handlers on one
// bridge: `announcer` (bridge, then the announcer, default settings) and
// `control` (the bridge alone), host-local IPAM. Each batch starts PODS
// sandboxes at once through one handler and times each RunPodSandbox; then
// stops and removes them (untimed). Each run takes three batches: the bridge
// alone, the announcer cold (its announcer stopped before the batch: a node
// after a reboot), the announcer warm. Root only; everything is removed on
// exit, failure or signal.
//
//   BENCH_PODS=N   pods per batch (default 40)   BENCH_CRI_RUNS=N   runs (default 2)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ANNOUNCER, SYSTEM_CNI_DIR } from '../../test/integration/harness/cni';
import { createPodNetwork } from '../../test/integration/harness/bridge-pods';
import {
  containerdUnavailable,
  privateContainerd,
  type PrivateContainerd,
} from '../../test/integration/harness/containerd';
import { buildPauseImage } from '../../test/integration/harness/oci-image';
import type { Scope } from '../../test/integration/harness/scope';
import { scopedMain } from '../shared/scoped-main';
import { findAnnouncer, stopAnnouncer } from './announcer-proc';
import { criVerdict } from './budgets';
import { loadLine } from './machine';
import { markdownTable, renderVerdicts } from './report';
import { median, quantile } from './stats';

const SANDBOX_IMAGE = 'localhost/announcer-bench-pause:1';
const BATCHES = ['bridge alone', 'announcer, cold', 'announcer, warm'] as const;
type Batch = (typeof BATCHES)[number];

/** A positive integer from the environment, or the default. */
function intFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return n;
}

/** containerd with both handlers on one fresh bridge; the announcer's stateDir in the bench's temp dir. */
async function startContainerd(
  scope: Scope,
  dir: string,
  pods: number,
): Promise<{ ctd: PrivateContainerd; stateDir: string }> {
  const { bridge, net } = await createPodNetwork(scope, 'bcri');
  const stateDir = join(dir, 'announcer-state');
  const ipam = {
    type: 'host-local',
    ranges: [
      [{ subnet: `${net.v4(0)}/24`, rangeStart: net.v4(10), rangeEnd: net.v4(10 + pods + 10), gateway: net.v4(1) }],
    ],
  };
  const bridgeConf = { type: 'bridge', bridge, isGateway: false, ipMasq: false, ipam };
  // Runs after containerd's undo steps (newest first), whose DELs of any sandbox left may start an announcer.
  scope.defer(() => stopAnnouncer(stateDir), 'the announcer of the bench stateDir');
  const ctd = await privateContainerd(scope, {
    dir,
    networks: [
      {
        handler: 'announcer',
        conflist: { cniVersion: '1.0.0', name: 'bcri-ann', plugins: [bridgeConf, { type: 'announcer', stateDir }] },
      },
      { handler: 'control', conflist: { cniVersion: '1.0.0', name: 'bcri-ctl', plugins: [bridgeConf] } },
    ],
    sandboxImage: { name: SANDBOX_IMAGE, archive: await buildPauseImage(join(dir, 'image'), SANDBOX_IMAGE) },
    plugins: {
      announcer: ANNOUNCER,
      ...Object.fromEntries(['bridge', 'host-local', 'loopback'].map((p) => [p, join(SYSTEM_CNI_DIR, p)])),
    },
  });
  return { ctd, stateDir };
}

/**
 * Starts `pods` sandboxes at once through `handler`; resolves with each RunPodSandbox's time (ms), after removing them
 * all.
 */
async function batch(ctd: PrivateContainerd, handler: string, pods: number, tag: string): Promise<number[]> {
  const ids: string[] = [];
  const times = await Promise.all(
    Array.from({ length: pods }, async (_, i) => {
      const metadata = { name: `pod-${i}`, uid: `bench-cri-${tag}-${i}`, namespace: 'bench-cri' };
      const t0 = process.hrtime.bigint();
      ids.push(
        await ctd.cri.runPodSandbox(
          { metadata, hostname: metadata.name, linux: { cgroupParent: ctd.cgroupParent } },
          handler,
        ),
      );
      return Number(process.hrtime.bigint() - t0) / 1e6;
    }),
  );
  await Promise.all(
    ids.map(async (id) => {
      await ctd.cri.stopPodSandbox(id);
      await ctd.cri.removePodSandbox(id);
    }),
  );
  return times;
}

/** The table of the batches (all runs pooled), the budget's verdicts, and each run's medians. */
function report(samples: Map<Batch, number[][]>, pods: number, runs: number): string[] {
  const all = (b: Batch): number[] => samples.get(b)!.flat();
  const control = median(all('bridge alone'));
  const fmt = (ms: number): string => (ms / 1000).toFixed(2);
  const body = BATCHES.map((b) => {
    const xs = all(b);
    return [
      b,
      fmt(median(xs)),
      `${fmt(quantile(xs, 0.25))}–${fmt(quantile(xs, 0.75))}`,
      `${(median(xs) / control).toFixed(2)}×`,
    ];
  });
  const perRun = BATCHES.map(
    (b) =>
      `${b}: ${samples
        .get(b)!
        .map((xs) => fmt(median(xs)))
        .join(', ')} s`,
  );
  return [
    `${pods} pod sandboxes at once through containerd's CRI, ` +
      `${runs} runs of 3 batches (bridge alone, announcer cold, announcer warm)`,
    '',
    markdownTable(['RunPodSandbox', 'median s', 'p25–p75 s', '× bridge alone'], body, [false, true, true, true]),
    '',
    'Budget (median start ≤ 1.2× the bridge alone):',
    renderVerdicts(
      ['announcer, cold', 'announcer, warm'].map((b) => ({
        ...criVerdict(median(all(b as Batch)), control),
        label: `${b}: ≤ 1.2× the bridge alone`,
      })),
    ),
    `Each run's medians: ${perRun.join('; ')}`,
    `load at the end: ${loadLine()}`,
  ];
}

await scopedMain('bench-cri', async (scope, abort) => {
  const why = containerdUnavailable();
  if (why !== undefined) throw new Error(`make bench-cri needs containerd, runc, busybox-static and root: ${why}`);
  const pods = intFromEnv('BENCH_PODS', 40);
  const runs = intFromEnv('BENCH_CRI_RUNS', 2);
  const dir = mkdtempSync(join(tmpdir(), 'cni-bench-cri-'));
  scope.defer(() => rmSync(dir, { recursive: true, force: true }), 'bench dir');
  const { ctd, stateDir } = await startContainerd(scope, dir, pods);
  const samples = new Map<Batch, number[][]>(BATCHES.map((b) => [b, []]));
  for (let run = 0; run < runs; run++) {
    for (const b of BATCHES) {
      if (b === 'announcer, cold') stopAnnouncer(stateDir);
      if (b === 'announcer, warm' && findAnnouncer(stateDir) === undefined)
        throw new Error('no announcer running before the warm batch');
      samples
        .get(b)!
        .push(
          await batch(ctd, b === 'bridge alone' ? 'control' : 'announcer', pods, `${run}-${b.replace(/\W+/g, '')}`),
        );
      process.stderr.write(`run ${run + 1}/${runs}: ${b} done\n`);
      abort.throwIfAborted();
    }
  }
  process.stdout.write(`${report(samples, pods, runs).join('\n')}\n`);
});
