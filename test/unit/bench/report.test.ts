import { describe, expect, it } from 'vitest';
import { markdownTable, renderTable, renderVerdicts } from '../../../scripts/bench/report';
import { median, quantile } from '../../../scripts/bench/stats';

describe('median and quantile', () => {
  it('take the middle value, or the mean of the two middle values', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(Number.isNaN(median([]))).toBe(true);
  });

  it('interpolate between ranks', () => {
    expect(quantile([10, 20, 30, 40, 50], 0.25)).toBe(20);
    expect(quantile([1, 2], 0.25)).toBe(1.25);
  });
});

describe('markdownTable', () => {
  it('pads every column to its widest cell and marks right-aligned columns', () => {
    expect(
      markdownTable(
        ['a', 'num'],
        [
          ['long name', '1.5'],
          ['x', '10.25'],
        ],
        [false, true],
      ),
    ).toBe(
      ['| a         |   num |', '|-----------|------:|', '| long name |   1.5 |', '| x         | 10.25 |'].join('\n'),
    );
  });
});

describe('renderTable', () => {
  it('gives medians, the middle half, ratios to the yardstick and the peer, and RSS', () => {
    const out = renderTable(
      [
        { name: 'peer', samples: [4, 5, 6], rssKiB: 4096 },
        { name: 'node', samples: [20, 30, 40], rssKiB: 38912 },
        { name: 'close', samples: [1, 2, 3], syscall: true },
      ],
      { name: 'node', label: 'node' },
      { name: 'peer', label: 'tuning' },
    ).split('\n');
    expect(out[0]).toBe('| command | median ms | p25–p75 ms | × node | × tuning | peak RSS MiB |');
    expect(out[2]).toBe('| peer    |       5.0 |    4.5–5.5 |  0.17× |    1.00× |          4.0 |');
    expect(out[3]).toBe('| node    |      30.0 |  25.0–35.0 |  1.00× |    6.00× |         38.0 |');
    expect(out[4]).toBe('| close   |       2.0 |    1.5–2.5 |      — |        — |            — |');
  });

  it('shows sub-millisecond medians with three decimals', () => {
    const out = renderTable([{ name: 'n', samples: [0.0234] }], { name: 'n', label: 'n' }, { name: 'n', label: 'n' });
    expect(out).toContain('0.023');
  });
});

describe('renderVerdicts', () => {
  it('prints PASS or FAIL, the label and the figure', () => {
    expect(
      renderVerdicts([
        { label: 'short', measured: '1×', pass: true },
        { label: 'a longer one', measured: '2×', pass: false },
      ]),
    ).toBe(['  PASS  short         1×', '  FAIL  a longer one  2×'].join('\n'));
  });
});
