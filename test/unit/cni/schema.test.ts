import { describe, expect, it } from 'vitest';
import { accepting, arrayOf, check, choice, intFrom, isString, looseObject, optional, refined } from '../../../src/cni/schema';

const str = accepting(isString, 'must be a string');

describe('schema', () => {
  it('keeps unknown keys of a loose object, or drops them when asked', () => {
    const shape = { a: str, b: optional(str) };
    expect(check(looseObject(shape, 'must be an object'), { a: 'x', extra: 1 })).toEqual({ ok: true, value: { a: 'x', extra: 1 } });
    expect(check(looseObject(shape, 'must be an object', 'drop'), { a: 'x', extra: 1 })).toEqual({ ok: true, value: { a: 'x' } });
  });

  it('reports every bad field with its path, and a missing required one', () => {
    const schema = looseObject({ a: str, list: arrayOf(intFrom(0, 9, 'must be a digit'), 'must be an array') }, 'must be an object');
    expect(check(schema, { list: [1, 'x', 12] })).toEqual({
      ok: false,
      issues: [
        { path: ['a'], message: 'must be a string' },
        { path: ['list', 1], message: 'must be a digit' },
        { path: ['list', 2], message: 'must be a digit' },
      ],
    });
    expect(check(schema, [])).toEqual({ ok: false, issues: [{ path: [], message: 'must be an object' }] });
  });

  it('runs refinements only on a value of the right type, and stops at the first that fails', () => {
    const short = refined(
      str,
      (s) => (s.length <= 3 ? undefined : 'must be short'),
      (s) => (s === s.toLowerCase() ? undefined : 'must be lower case'),
    );
    expect(check(short, 5)).toEqual({ ok: false, issues: [{ path: [], message: 'must be a string' }] });
    expect(check(short, 'LONGER')).toEqual({ ok: false, issues: [{ path: [], message: 'must be short' }] });
    expect(check(short, 'AB')).toEqual({ ok: false, issues: [{ path: [], message: 'must be lower case' }] });
    expect(check(short, 'ab')).toEqual({ ok: true, value: 'ab' });
  });

  it('accepts only safe integers in range', () => {
    const digit = intFrom(0, 9, 'must be a digit');
    for (const bad of [1.5, -1, 10, '3', Number.NaN, 2 ** 60]) expect(check(digit, bad).ok).toBe(false);
    expect(check(digit, 9)).toEqual({ ok: true, value: 9 });
  });

  it('lists the values a choice allows, quoted when asked', () => {
    expect(check(choice(['a', 'b']), 'c')).toEqual({ ok: false, issues: [{ path: [], message: 'must be one of a, b' }] });
    expect(check(choice(['a', 'b'], '"'), 'c')).toEqual({ ok: false, issues: [{ path: [], message: 'must be one of "a", "b"' }] });
    expect(check(choice(['a', 'b'], '"'), 'b')).toEqual({ ok: true, value: 'b' });
  });
});
