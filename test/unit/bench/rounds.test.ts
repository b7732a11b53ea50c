import { describe, expect, it } from 'vitest';
import { rotation, runRounds, type Row } from '../../../scripts/bench/rounds';

describe('rotation', () => {
  it('starts each round one row later, wrapping around', () => {
    expect(rotation(['a', 'b', 'c'], 0)).toEqual(['a', 'b', 'c']);
    expect(rotation(['a', 'b', 'c'], 1)).toEqual(['b', 'c', 'a']);
    expect(rotation(['a', 'b', 'c'], 2)).toEqual(['c', 'a', 'b']);
    expect(rotation(['a', 'b', 'c'], 3)).toEqual(['a', 'b', 'c']);
  });

  it('gives nothing for no rows', () => {
    expect(rotation([], 5)).toEqual([]);
  });
});

describe('runRounds', () => {
  it('runs every row once per round in rotating order and drops the warm-up rounds', async () => {
    const calls: string[] = [];
    let tick = 0;
    const row = (name: string): Row => ({
      sample: () => {
        calls.push(name);
        return { [name]: ++tick };
      },
    });
    const seen: number[] = [];
    const samples = await runRounds([row('a'), row('b')], {
      rounds: 2,
      warmup: 1,
      progress: (done) => seen.push(done),
    });
    expect(calls).toEqual(['a', 'b', 'b', 'a', 'a', 'b']);
    expect(samples.get('a')).toEqual([4, 5]);
    expect(samples.get('b')).toEqual([3, 6]);
    expect(seen).toEqual([1, 2, 3]);
  });

  it('collects every table row a step feeds', async () => {
    const probe: Row = { sample: () => ({ last: 9, shared: 0.02 }) };
    const samples = await runRounds([probe], { rounds: 2, warmup: 0 });
    expect(samples.get('last')).toEqual([9, 9]);
    expect(samples.get('shared')).toEqual([0.02, 0.02]);
  });

  it('stops when `between` throws (a signal arrived)', async () => {
    let n = 0;
    const row: Row = { sample: () => ({ a: ++n }) };
    const between = async (): Promise<void> => {
      if (n === 2) throw new Error('aborted');
    };
    await expect(runRounds([row], { rounds: 5, warmup: 0, between })).rejects.toThrow('aborted');
    expect(n).toBe(2);
  });
});
