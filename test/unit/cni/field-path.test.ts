import { describe, expect, it } from 'vitest';
import { describeValue, fieldProblem, formatPath, valueAt } from '../../../src/cni/field-path';

describe('field paths', () => {
  it('formats keys and indexes', () => {
    expect(formatPath(['prevResult', 'ips', 1, 'address'])).toBe('prevResult.ips[1].address');
    expect(formatPath(['interfaces', 0])).toBe('interfaces[0]');
    expect(formatPath([])).toBe('');
  });

  it('describes values as short JSON', () => {
    expect(describeValue(11)).toBe('11');
    expect(describeValue('x')).toBe('"x"');
    expect(describeValue(undefined)).toBe('nothing');
    expect(describeValue('a'.repeat(100))).toBe(`"${'a'.repeat(56)}...`);
  });

  it('builds one problem text', () => {
    expect(fieldProblem(['count'], 'must be an integer from 0 to 10', 11)).toBe(
      '"count" must be an integer from 0 to 10 (got 11)',
    );
    expect(fieldProblem(['name'], 'must be a string', undefined)).toBe('"name" is required');
  });

  it('reads values by path', () => {
    expect(valueAt({ a: [{ b: 2 }] }, ['a', 0, 'b'])).toBe(2);
    expect(valueAt({ a: 'x' }, ['a', 'b'])).toBeUndefined();
    expect(valueAt(null, ['a'])).toBeUndefined();
  });
});
