import { describe, expect, it } from 'vitest';
import { ifnameProblem } from '../../../src/cni/ifname';

describe('ifnameProblem', () => {
  it.each(['eth0', 'net1', 'a', 'x'.repeat(15), 'veth-ab_c.1'])('accepts %j', (name) => {
    expect(ifnameProblem(name)).toBeUndefined();
  });

  it.each([
    ['', 'must not be empty'],
    ['x'.repeat(16), 'must be at most 15 bytes long'],
    ['é'.repeat(8), 'must be at most 15 bytes long'],
    ['.', 'must not be "." or ".."'],
    ['..', 'must not be "." or ".."'],
    ['a/b', 'must not contain "/", ":" or whitespace'],
    ['a:b', 'must not contain "/", ":" or whitespace'],
    ['a b', 'must not contain "/", ":" or whitespace'],
    ['a\tb', 'must not contain "/", ":" or whitespace'],
  ])('rejects %j', (name, problem) => {
    expect(ifnameProblem(name)).toBe(problem);
  });
});
