import { describe, expect, it } from 'vitest';
import { checkBudgets, peerLine, probeCostVerdict, ROWS } from '../../../scripts/bench/budgets';
import type { TableRow } from '../../../scripts/bench/report';

const rows = (over: Partial<Record<string, Partial<TableRow>>> = {}): TableRow[] =>
  [
    { name: ROWS.tuning, samples: [4] },
    { name: ROWS.node, samples: [30] },
    { name: ROWS.runtimeFloor, samples: [10], rssKiB: 20 * 1024 },
    { name: ROWS.version, samples: [15] },
    { name: ROWS.addOne, samples: [22], rssKiB: 25 * 1024 },
    { name: ROWS.addDefault, samples: [27], rssKiB: 29 * 1024 },
  ].map((r) => ({ ...r, ...over[r.name] }));

describe('checkBudgets', () => {
  it('passes within every budget', () => {
    const verdicts = checkBudgets(rows());
    expect(verdicts.map((v) => [v.label, v.measured, v.pass])).toEqual([
      ['ADD count 1 ≤ 0.8× node', '0.73× node', true],
      ['ADD defaults ≤ 0.9× node', '0.90× node', true],
      ['VERSION ≤ 0.6× node', '0.50× node', true],
      ['ADD peak RSS ≤ 30 MiB', '29.0 MiB (the larger of the two ADD rows; the empty program: 20.0 MiB)', true],
    ]);
  });

  it('fails a ratio over its limit and RSS over 30 MiB in either ADD row', () => {
    const verdicts = checkBudgets(rows({ [ROWS.version]: { samples: [19] }, [ROWS.addOne]: { rssKiB: 31 * 1024 } }));
    expect(verdicts.map((v) => v.pass)).toEqual([true, true, false, false]);
  });

  it('fails the RSS budget when a figure is missing', () => {
    const verdicts = checkBudgets(rows({ [ROWS.addDefault]: { rssKiB: undefined } }));
    expect(verdicts[3]!.pass).toBe(false);
  });
});

describe('peerLine', () => {
  it('gives ADD count 1 as a multiple of the Go peer', () => {
    expect(peerLine(rows())).toBe('ADD count 1 / Go tuning ADD: 5.5× (goal on the way: ≤ 3×)');
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
    expect(probeCostVerdict(withProbe([30], [25])).measured).toBe('-5.0 ms (median of the per-round differences to ADD count 1)');
  });

  it('fails above it, without samples, or with rows of different lengths', () => {
    expect(probeCostVerdict(withProbe([22], [127.5])).pass).toBe(false);
    expect(probeCostVerdict(rows()).pass).toBe(false);
    expect(probeCostVerdict(withProbe([22, 22], [120])).pass).toBe(false);
  });
});
