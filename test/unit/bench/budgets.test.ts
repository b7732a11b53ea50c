import { describe, expect, it } from 'vitest';
import {
  checkBudgets,
  cpuVerdict,
  criVerdict,
  exchangeFloorLine,
  peerLine,
  probeCostVerdict,
  ROWS,
} from '../../../scripts/bench/budgets';
import type { TableRow } from '../../../scripts/bench/report';

const rows = (over: Partial<Record<string, Partial<TableRow>>> = {}): TableRow[] =>
  [
    { name: ROWS.tuning, samples: [4] },
    { name: ROWS.node, samples: [30] },
    { name: ROWS.runtimeFloor, samples: [10], rssKiB: 20 * 1024 },
    { name: ROWS.version, samples: [11.5] },
    { name: ROWS.addOne, samples: [16], rssKiB: 25 * 1024 },
    { name: ROWS.addDefault, samples: [27], rssKiB: 28 * 1024 },
    { name: ROWS.addCold, samples: [50], rssKiB: 40 * 1024 },
    { name: ROWS.del, samples: [14] },
  ].map((r) => ({ ...r, ...over[r.name] }));

describe('checkBudgets', () => {
  it('passes within every budget, each a multiple of the runtime floor', () => {
    const verdicts = checkBudgets(rows());
    expect(verdicts.map((v) => [v.label, v.measured, v.pass])).toEqual([
      ['warm ADD count 1 ≤ 1.6× floor', '1.60× floor', true],
      ['cold ADD count 1 ≤ 5× floor', '5.00× floor', true],
      ['DEL ≤ 1.4× floor', '1.40× floor', true],
      ['VERSION ≤ 1.15× floor', '1.15× floor', true],
      [
        'ADD peak RSS ≤ floor + 8 MiB',
        'floor + 8.0 MiB (the shim; the larger of the two warm ADD rows; the floor: 20.0 MiB)',
        true,
      ],
    ]);
  });

  it('fails a ratio over its limit and RSS over floor + 8 MiB in either warm ADD row', () => {
    const verdicts = checkBudgets(
      rows({ [ROWS.version]: { samples: [11.6] }, [ROWS.addOne]: { rssKiB: 28 * 1024 + 1 } }),
    );
    expect(verdicts.map((v) => v.pass)).toEqual([true, true, true, false, false]);
    expect(
      checkBudgets(rows({ [ROWS.del]: { samples: [14.1] }, [ROWS.addOne]: { samples: [16.1] } })).map((v) => v.pass),
    ).toEqual([false, true, false, true, true]);
    expect(
      checkBudgets(rows({ [ROWS.addCold]: { samples: [50.1] }, [ROWS.addDefault]: { rssKiB: 28 * 1024 + 1 } })).map(
        (v) => v.pass,
      ),
    ).toEqual([true, false, true, true, false]);
  });

  it('leaves the cold row out of the RSS budget: its shim is not a warm ADD', () => {
    expect(checkBudgets(rows({ [ROWS.addCold]: { rssKiB: 99 * 1024 } }))[4]!.pass).toBe(true);
  });

  it('fails a ratio whose row has no samples', () => {
    expect(checkBudgets(rows({ [ROWS.addCold]: { samples: [] } }))[1]!.pass).toBe(false);
  });

  it('fails the RSS budget when a figure is missing', () => {
    expect(checkBudgets(rows({ [ROWS.addDefault]: { rssKiB: undefined } }))[4]!.pass).toBe(false);
    expect(checkBudgets(rows({ [ROWS.runtimeFloor]: { rssKiB: undefined } }))[4]!.pass).toBe(false);
  });
});

describe('peerLine', () => {
  it('gives the budgeted rows and the floor as multiples of the Go peer', () => {
    expect(peerLine(rows())).toBe(
      'Against the Go tuning ADD: warm ADD count 1 4.0×, cold ADD 12.5×, DEL 3.5×, VERSION 2.9×, the floor 2.5×',
    );
  });
});

describe('exchangeFloorLine', () => {
  it('gives the exchange floor rows against the runtime floor, and what the shim adds to each', () => {
    const table = [
      ...rows(),
      { name: ROWS.exchangeAddOne, samples: [15.2] },
      { name: ROWS.exchangeDel, samples: [13.5] },
    ];
    expect(exchangeFloorLine(table)).toBe(
      'The exchange floor (one request to the announcer, none of the shim’s work), against the runtime floor: ' +
        'warm ADD count 1 1.52× (budget 1.6×; the shim adds 0.8 ms), DEL 1.35× (budget 1.4×; the shim adds 0.5 ms)',
    );
  });
});

describe('criVerdict', () => {
  it('passes at 1.2× the bridge alone and fails above', () => {
    expect(criVerdict(1200, 1000)).toEqual({
      label: 'CRI median RunPodSandbox ≤ 1.2× the bridge alone',
      measured: '1.20× the bridge alone',
      pass: true,
    });
    expect(criVerdict(1201, 1000).pass).toBe(false);
  });
});

describe('cpuVerdict', () => {
  it("passes at 4× the floor's CPU for one run and fails above", () => {
    expect(cpuVerdict(20, 5)).toEqual({
      label: "node CPU per pod cycle ≤ 4× the floor's CPU for one run",
      measured: "20.0 ms = 4.00× the floor's 5.0 ms",
      pass: true,
    });
    expect(cpuVerdict(20.1, 5).pass).toBe(false);
  });
});

describe('probeCostVerdict', () => {
  const withProbe = (plain: number[], probed: number[]): TableRow[] => [
    ...rows({ [ROWS.addOne]: { samples: plain } }),
    { name: ROWS.addProbe, samples: probed },
  ];

  it('passes when conflictCheck adds at most probeMs + 5 ms, as the median of the per-round differences', () => {
    // Differences 104, 105, 300: a noisy round moves a difference of medians more than this.
    expect(probeCostVerdict(withProbe([20, 22, 90], [124, 127, 390]))).toEqual({
      label: 'conflictCheck adds ≤ probeMs + 5 ms = 105 ms to ADD',
      measured: '+105.0 ms (median of the per-round differences to ADD count 1)',
      pass: true,
    });
  });

  it('prints a negative difference (noise) without a plus sign', () => {
    expect(probeCostVerdict(withProbe([30], [25])).measured).toBe(
      '-5.0 ms (median of the per-round differences to ADD count 1)',
    );
  });

  it('fails above it, without samples, or with rows of different lengths', () => {
    expect(probeCostVerdict(withProbe([22], [127.5])).pass).toBe(false);
    expect(probeCostVerdict(rows()).pass).toBe(false);
    expect(probeCostVerdict(withProbe([22, 22], [120])).pass).toBe(false);
  });
});
