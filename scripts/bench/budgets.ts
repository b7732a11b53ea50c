// The budgets of release 0.2.0 (CHANGELOG.md), checked against the bench's medians and peak RSS.
import type { TableRow, Verdict } from './report';
import { median } from './stats';

/** The table's rows, by role; the names are what the table prints. */
export const ROWS = {
  floor: '/bin/true (spawn floor)',
  tuning: 'Go tuning ADD, after bridge',
  node: 'node, empty file',
  runtimeFloor: 'empty program, built as the plugin is',
  version: 'announcer VERSION',
  addNothing: 'announcer ADD, count 0 (warm): nothing to send',
  addOne: 'announcer ADD, count 1 (warm)',
  addProbe: 'announcer ADD, count 1, conflictCheck warn (warm)',
  addOff: 'announcer ADD, count 1, gatewayCheck off (warm)',
  addRequire: 'announcer ADD, count 1, gatewayCheck require (warm)',
  addDefault: 'announcer ADD, defaults (warm)',
  addCold: 'announcer ADD, count 1, cold (starts one)',
  del: 'announcer DEL (warm)',
  exchangeAddOne: 'exchange floor: ADD count 1 (warm), no shim',
  exchangeDel: 'exchange floor: DEL (warm), no shim',
} as const;

/**
 * Release 0.2.0's budgets: each a multiple of the runtime's floor (the empty program built as the plugin is), RSS in
 * MiB
 * over it.
 */
export const BUDGETS = {
  /** ADD count 1 with an announcer already running. */
  addOneVsFloor: 1.6,
  /** ADD count 1 with no announcer before it: the shim starts one and waits for it to listen. */
  addColdVsFloor: 5,
  delVsFloor: 1.4,
  versionVsFloor: 1.15,
  addPeakRssOverFloorMiB: 8,
} as const;

/** Checks every budget; a row without samples fails its budget. */
export function checkBudgets(rows: readonly TableRow[]): Verdict[] {
  const row = (name: string): TableRow | undefined => rows.find((r) => r.name === name);
  const med = (name: string): number => median(row(name)?.samples ?? []);
  const floor = med(ROWS.runtimeFloor);
  const ratio = (name: string, limit: number, label: string): Verdict => {
    const r = med(name) / floor;
    return { label: `${label} ≤ ${limit}× floor`, measured: `${r.toFixed(2)}× floor`, pass: r <= limit };
  };
  const rssKiB = [row(ROWS.addOne)?.rssKiB, row(ROWS.addDefault)?.rssKiB, row(ROWS.runtimeFloor)?.rssKiB];
  const [overMiB, floorMiB] = rssKiB.some((k) => k === undefined)
    ? [Number.NaN, Number.NaN]
    : [(Math.max(rssKiB[0]!, rssKiB[1]!) - rssKiB[2]!) / 1024, rssKiB[2]! / 1024];
  return [
    ratio(ROWS.addOne, BUDGETS.addOneVsFloor, 'warm ADD count 1'),
    ratio(ROWS.addCold, BUDGETS.addColdVsFloor, 'cold ADD count 1'),
    ratio(ROWS.del, BUDGETS.delVsFloor, 'DEL'),
    ratio(ROWS.version, BUDGETS.versionVsFloor, 'VERSION'),
    {
      label: `ADD peak RSS ≤ floor + ${BUDGETS.addPeakRssOverFloorMiB} MiB`,
      measured:
        `floor + ${overMiB.toFixed(1)} MiB ` +
        `(the shim; the larger of the two warm ADD rows; the floor: ${floorMiB.toFixed(1)} MiB)`,
      pass: overMiB <= BUDGETS.addPeakRssOverFloorMiB,
    },
  ];
}

/** The probe window of the conflictCheck row (the default probeMs). */
export const PROBE_MS = 100;

/**
 * The conflict probe's budget: with conflictCheck and no conflict, ADD takes at most
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

/** The budgeted rows as multiples of the Go peer, beside the budgets' floor ratios. */
export function peerLine(rows: readonly TableRow[]): string {
  const med = (name: string): number => median(rows.find((r) => r.name === name)?.samples ?? []);
  const tuning = med(ROWS.tuning);
  const x = (name: string): string => `${(med(name) / tuning).toFixed(1)}×`;
  return (
    `Against the Go tuning ADD: warm ADD count 1 ${x(ROWS.addOne)}, cold ADD ${x(ROWS.addCold)}, ` +
    `DEL ${x(ROWS.del)}, VERSION ${x(ROWS.version)}, the floor ${x(ROWS.runtimeFloor)}`
  );
}

/**
 * The exchange's floor beside the budgets: what one request to the announcer costs a client that does nothing else
 * (exchange-floor-entry.ts), and what the shim adds to it, for warm ADD count 1 and DEL.
 */
export function exchangeFloorLine(rows: readonly TableRow[]): string {
  const med = (name: string): number => median(rows.find((r) => r.name === name)?.samples ?? []);
  const floor = med(ROWS.runtimeFloor);
  const pair = (label: string, shim: string, bare: string, budget: number): string => {
    const added = (med(shim) - med(bare)).toFixed(1);
    return `${label} ${(med(bare) / floor).toFixed(2)}× (budget ${budget}×; the shim adds ${added} ms)`;
  };
  return (
    'The exchange floor (one request to the announcer, none of the shim’s work), against the runtime floor: ' +
    `${pair('warm ADD count 1', ROWS.addOne, ROWS.exchangeAddOne, BUDGETS.addOneVsFloor)}, ` +
    `${pair('DEL', ROWS.del, ROWS.exchangeDel, BUDGETS.delVsFloor)}`
  );
}

/**
 * The budget for pod sandboxes started together through containerd's CRI: median with the announcer ≤ 1.2× the
 * bridge alone's.
 */
export const CRI_BUDGET = 1.2;

/** The CRI budget's verdict, from the median RunPodSandbox times (ms) with and without the announcer. */
export function criVerdict(withAnnouncerMs: number, bridgeAloneMs: number): Verdict {
  const r = withAnnouncerMs / bridgeAloneMs;
  return {
    label: `CRI median RunPodSandbox ≤ ${CRI_BUDGET}× the bridge alone`,
    measured: `${r.toFixed(2)}× the bridge alone`,
    pass: r <= CRI_BUDGET,
  };
}

/** The budget for node CPU per pod cycle, in multiples of the runtime floor's CPU for one run. */
export const CPU_BUDGET_VS_FLOOR = 4;

/**
 * The CPU budget's verdict: the announcer's share of node CPU per pod cycle against the floor's CPU for one run (ms).
 */
export function cpuVerdict(perPodMs: number, floorRunMs: number): Verdict {
  const r = perPodMs / floorRunMs;
  return {
    label: `node CPU per pod cycle ≤ ${CPU_BUDGET_VS_FLOOR}× the floor's CPU for one run`,
    measured: `${perPodMs.toFixed(1)} ms = ${r.toFixed(2)}× the floor's ${floorRunMs.toFixed(1)} ms`,
    pass: r <= CPU_BUDGET_VS_FLOOR,
  };
}
