import { describe, expect, it } from 'vitest';
import { decodeConfig, MAX_JSON_DEPTH, nestingExceeds } from '../../../src/cni/decode';
import { cniError } from '../../support/cni-errors';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

const decodeError = (input: Uint8Array) => cniError(() => decodeConfig(input));

describe('decodeConfig', () => {
  it('decodes a JSON object, unknown fields and all', () => {
    expect(decodeConfig(bytes('{"cniVersion":"1.0.0","x":{"y":[1,2]}}'))).toEqual({
      cniVersion: '1.0.0',
      x: { y: [1, 2] },
    });
  });

  it('skips a UTF-8 byte order mark', () => {
    expect(decodeConfig(bytes('\uFEFF{"a":1}'))).toEqual({ a: 1 });
  });

  it('takes text already decoded (the announcer, from the request line) as it is, less a byte order mark', () => {
    expect(decodeConfig('\uFEFF{"a":"\u00e9"}')).toEqual({ a: 'é' });
    expect(decodeConfig('{"a":"b\uFEFF"}')).toEqual({ a: 'b\uFEFF' }); // only a leading one
    expect(cniError(() => decodeConfig('[1]')).message).toBe('stdin is not a JSON object (got [1])');
  });

  it.each([
    ['', 'stdin is empty: expected the network config as JSON'],
    [' \n', 'stdin is empty: expected the network config as JSON'],
    ['[1]', 'stdin is not a JSON object (got [1])'],
    ['null', 'stdin is not a JSON object (got null)'],
  ])('refuses %j with code 6', (text, msg) => {
    const e = decodeError(bytes(text));
    expect([e.code, e.message]).toEqual([6, msg]);
    expect(e).not.toHaveProperty('cause');
  });

  it('refuses text that is not JSON with code 6, the parser error its cause', () => {
    const e = decodeError(bytes('{"cniVersion": '));
    expect(e.code).toBe(6);
    expect(e.message).toMatch(/^stdin is not JSON: /);
    expect(e.cause).toBeInstanceOf(SyntaxError);
  });

  it('refuses bytes that are not UTF-8 with code 6, the decoder error its cause', () => {
    const e = decodeError(Uint8Array.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]));
    expect([e.code, e.message]).toEqual([6, 'stdin is not valid UTF-8: expected the network config as JSON']);
    expect(e.cause).toBeInstanceOf(TypeError);
  });

  it('accepts nesting up to the limit and refuses one level more with code 6', () => {
    const nested = (levels: number) => `{"a":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;
    expect(() => decodeConfig(bytes(nested(MAX_JSON_DEPTH)))).not.toThrow();
    const e = decodeError(bytes(nested(MAX_JSON_DEPTH + 1)));
    expect([e.code, e.message]).toEqual([
      6,
      'stdin nests JSON arrays and objects more than 64 levels deep, the most a network config may',
    ]);
  });

  it('refuses 3,000 levels (and 1,000,000) without overflowing the stack', () => {
    expect(decodeError(bytes(`{"prevResult":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}`)).code).toBe(6);
    expect(decodeError(bytes('['.repeat(1_000_000))).code).toBe(6);
  });
});

describe('nestingExceeds', () => {
  it('counts brackets outside strings only, escapes included', () => {
    expect(nestingExceeds('{"a":"[[[[[[[["}', 2)).toBe(false);
    expect(nestingExceeds('{"a":"\\\\"}', 1)).toBe(false);
    expect(nestingExceeds('{"a\\"[[[":[[1]]}', 3)).toBe(false);
    expect(nestingExceeds('{"a\\"[[[":[[[1]]]}', 3)).toBe(true);
  });

  it('measures depth, not the number of brackets', () => {
    expect(nestingExceeds('[[1],[2],[3],[4]]', 2)).toBe(false);
    expect(nestingExceeds('[[[1]]]', 2)).toBe(true);
  });
});
