import { describe, expect, it } from 'vitest';
import { groupThousands, listProblems } from '../../../src/cni/problems';

describe('listProblems', () => {
  it('joins up to five problems with "; "', () => {
    expect(listProblems(['a'])).toBe('a');
    expect(listProblems(['a', 'b', 'c', 'd', 'e'])).toBe('a; b; c; d; e');
  });

  it('names the first five and counts the rest', () => {
    expect(listProblems(['a', 'b', 'c', 'd', 'e', 'f'])).toBe('a; b; c; d; e; … and 1 more');
    const many = Array.from({ length: 36_000 }, (_, i) => `p${i}`);
    expect(listProblems(many)).toBe('p0; p1; p2; p3; p4; … and 35,995 more');
  });

  it('takes another limit', () => {
    expect(listProblems(['a', 'b', 'c'], 1)).toBe('a; … and 2 more');
  });
});

describe('groupThousands', () => {
  it.each([
    [0, '0'],
    [999, '999'],
    [1000, '1,000'],
    [35995, '35,995'],
    [1234567, '1,234,567'],
  ])('%d → %s', (n, text) => {
    expect(groupThousands(n)).toBe(text);
  });
});
