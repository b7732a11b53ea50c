// The stock schemas: each refuses with its own expectation as the message, and check() names each bad field once.
import { describe, expect, it } from 'vitest';
import {
  absPath,
  bool,
  check,
  choice,
  ifname,
  intRange,
  list,
  listOf,
  nonEmpty,
  numRange,
  obj,
  str,
  strictShape,
  type AnySchema,
} from '../../../src/cni/zod-checks';

describe('the stock schemas', () => {
  it.each([
    ['str', 1, 'must be a string', () => str()],
    ['str with its message', 1, 'must be a name', () => str('must be a name')],
    ['bool', 'yes', 'must be true or false', () => bool()],
    ['obj', [], 'must be an object', () => obj({})],
    ['strictShape', 'x', 'must be an object', () => strictShape({})],
    ['list', 'x', 'must be an array', () => list(str())],
    ['listOf', ['a', 'b', 'c'], 'must have at most 2 entries', () => listOf(str(), 2)],
    ['intRange', 4, 'must be an integer from 1 to 3', () => intRange(1, 3)],
    ['intRange', 1.5, 'must be an integer from 1 to 3', () => intRange(1, 3)],
    ['intRange with its message', 0, 'must be a few', () => intRange(1, 3, 'must be a few')],
    ['numRange', 0.5, 'must be a number from 1 to 4', () => numRange(1, 4)],
    ['numRange with its message', 'x', 'must be a factor', () => numRange(1, 4, 'must be a factor')],
    ['choice', 'c', 'must be one of a, b', () => choice(['a', 'b'])],
    ['choice, quoted', 'c', 'must be one of "a", "b"', () => choice(['a', 'b'], '"')],
    ['absPath', 'run/x', 'must be an absolute path', () => absPath()],
    ['absPath', 'run/x/', 'must be an absolute path', () => absPath()],
    ['absPath', 3, 'must be an absolute path', () => absPath()],
    ['ifname', 'a/b', 'must not contain "/", ":" or whitespace', () => ifname()],
    ['ifname with its message', 'a/b', 'must name a link', () => ifname('must name a link')],
    ['ifname', 7, 'must be a string', () => ifname()],
    ['nonEmpty', '', 'must not be empty', () => nonEmpty()],
  ] as [string, unknown, string, () => AnySchema][])('%s refuses %j: %s', (_, value, message, schema) => {
    // Made inside the test, not when the table is: the schema's making is then the test's own.
    expect(check(schema(), value)).toEqual({ ok: false, issues: [{ path: [], message }] });
  });

  it.each([
    ['/run/x', () => absPath()],
    [['a', 'b'], () => listOf(str(), 2)],
    [4, () => numRange(1, 4)],
    ['eth0', () => ifname()],
    ['x', () => nonEmpty()],
  ] as [unknown, () => AnySchema][])('takes %j as it is', (value, schema) => {
    expect(check(schema(), value)).toEqual({ ok: true, value });
  });
});

describe('check', () => {
  it('names each bad field once, by its path of keys and indexes, in the order of the keys', () => {
    const schema = obj({ a: list(intRange(0, 10)), b: bool() });
    expect(check(schema, { b: 1, a: [0, 2 ** 60] })).toEqual({
      ok: false,
      issues: [
        { path: ['a', 1], message: 'must be an integer from 0 to 10' },
        { path: ['b'], message: 'must be true or false' },
      ],
    });
  });
});
