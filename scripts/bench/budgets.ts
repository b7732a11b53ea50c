// The budgets of issue 8, checked against the bench's medians and peak RSS.
import type { TableRow, Verdict } from './report';
import { median } from './stats';

/** The table's rows, by role; the names are what the table prints. */
export const ROWS = {
  floor: '/bin/true (spawn floor)',
  tuning: 'Go tuning ADD, after bridge',
  node: 'node, empty file',
  runtimeFloor: 'empty program, built as the plugin is',
  version: 'announcer VERSION',
  addOne: 'announcer ADD, count 1',
  addProbe: 'announcer ADD, count 1, conflictCheck warn',
  addDefault: 'announcer ADD, defaults',
  del: 'announcer DEL',
  closeLast: 'close(AF_PACKET), last ref',
  closeShared: 'close(AF_PACKET), a dup',
} as const;

/** Each budget's limit, as a multiple of the node yardstick's median or in MiB. */
export const BUDGETS = {
  addOneVsNode: 0.8,
  addDefaultVsNode: 0.9,
  versionVsNode: 0.6,
  addPeakRssMiB: 30,
  /** Not a budget yet: where ADD count 1 is heading, as a multiple of the Go peer. */
  addOneVsTuningGoal: 3,
} as const;

/** Checks every budget; a row without samples fails its budget. */
export function checkBudgets(rows: readonly TableRow[]): Verdict[] {
  const row = (name: string): TableRow | undefined => rows.find((r) => r.name === name);
  const med = (name: string): number => median(row(name)?.samples ?? []);
  const node = med(ROWS.node);
  const ratio = (name: string, limit: number, label: string): Verdict => {
    const r = med(name) / node;
    return { label: `${label} ≤ ${limit}× node`, measured: `${r.toFixed(2)}× node`, pass: r <= limit };
  };
  const rssKiB = [row(ROWS.addOne)?.rssKiB, row(ROWS.addDefault)?.rssKiB];
  const worstMiB = rssKiB.some((k) => k === undefined) ? Number.NaN : Math.max(...(rssKiB as number[])) / 1024;
  const floorKiB = row(ROWS.runtimeFloor)?.rssKiB;
  const floor = floorKiB === undefined ? '' : `; the empty program: ${(floorKiB / 1024).toFixed(1)} MiB`;
  return [
    ratio(ROWS.addOne, BUDGETS.addOneVsNode, 'ADD count 1'),
    ratio(ROWS.addDefault, BUDGETS.addDefaultVsNode, 'ADD defaults'),
    ratio(ROWS.version, BUDGETS.versionVsNode, 'VERSION'),
    {
      label: `ADD peak RSS ≤ ${BUDGETS.addPeakRssMiB} MiB`,
      measured: `${worstMiB.toFixed(1)} MiB (the larger of the two ADD rows${floor})`,
      pass: worstMiB <= BUDGETS.addPeakRssMiB,
    },
  ];
}

/** The probe window of the conflictCheck row (the default probeMs). */
export const PROBE_MS = 100;

/**
 * Issue 12's budget: with conflictCheck and no conflict, ADD takes at most
 * probeMs + 5 ms more than without. The two rows run next to each other in
 * every round, so the estimate is the median of the per-round differences,
 * which a busy machine disturbs less than a difference of medians.
 */
export function probeCostVerdict(rows: readonly TableRow[]): Verdict {
  const samples = (name: string): readonly number[] => rows.find((r) => r.name === name)?.samples ?? [];
  const probed = samples(ROWS.addProbe);
  const plain = samples(ROWS.addOne);
  const extra = probed.length === plain.length ? median(probed.map((ms, i) => ms - plain[i]!)) : Number.NaN;
  const limit = PROBE_MS + 5;
  return {
    label: `conflictCheck adds ≤ probeMs + 5 ms = ${limit} ms to ADD`,
    measured: `${extra < 0 ? '' : '+'}${extra.toFixed(1)} ms (median of the per-round differences to ADD count 1)`,
    pass: extra <= limit,
  };
}

/** ADD count 1 as a multiple of the Go peer, with the goal it is heading for. */
export function peerLine(rows: readonly TableRow[]): string {
  const med = (name: string): number => median(rows.find((r) => r.name === name)?.samples ?? []);
  const r = med(ROWS.addOne) / med(ROWS.tuning);
  return `ADD count 1 / Go tuning ADD: ${r.toFixed(1)}× (goal on the way: ≤ ${BUDGETS.addOneVsTuningGoal}×)`;
}
