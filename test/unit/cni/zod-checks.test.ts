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
    ['str', str(), 1, 'must be a string'],
    ['str with its message', str('must be a name'), 1, 'must be a name'],
    ['bool', bool(), 'yes', 'must be true or false'],
    ['obj', obj({}), [], 'must be an object'],
    ['strictShape', strictShape({}), 'x', 'must be an object'],
    ['list', list(str()), 'x', 'must be an array'],
    ['listOf', listOf(str(), 2), ['a', 'b', 'c'], 'must have at most 2 entries'],
    ['intRange', intRange(1, 3), 4, 'must be an integer from 1 to 3'],
    ['intRange', intRange(1, 3), 1.5, 'must be an integer from 1 to 3'],
    ['intRange with its message', intRange(1, 3, 'must be a few'), 0, 'must be a few'],
    ['numRange', numRange(1, 4), 0.5, 'must be a number from 1 to 4'],
    ['numRange with its message', numRange(1, 4, 'must be a factor'), 'x', 'must be a factor'],
    ['choice', choice(['a', 'b']), 'c', 'must be one of a, b'],
    ['choice, quoted', choice(['a', 'b'], '"'), 'c', 'must be one of "a", "b"'],
    ['absPath', absPath(), 'run/x', 'must be an absolute path'],
    ['absPath', absPath(), 'run/x/', 'must be an absolute path'],
    ['absPath', absPath(), 3, 'must be an absolute path'],
    ['ifname', ifname(), 'a/b', 'must not contain "/", ":" or whitespace'],
    ['ifname with its message', ifname('must name a link'), 'a/b', 'must name a link'],
    ['ifname', ifname(), 7, 'must be a string'],
    ['nonEmpty', nonEmpty(), '', 'must not be empty'],
  ] as [string, AnySchema, unknown, string][])('%s refuses %j: %s', (_, schema, value, message) => {
    expect(check(schema, value)).toEqual({ ok: false, issues: [{ path: [], message }] });
  });

  it.each([
    [absPath(), '/run/x'],
    [listOf(str(), 2), ['a', 'b']],
    [numRange(1, 4), 4],
    [ifname(), 'eth0'],
    [nonEmpty(), 'x'],
  ] as [AnySchema, unknown][])('%#: takes %j as it is', (schema, value) => {
    expect(check(schema, value)).toEqual({ ok: true, value });
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
