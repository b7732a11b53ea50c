import { describe, expect, it } from 'vitest';
import {
  CniError,
  describeValue,
  ErrorCode,
  fieldProblem,
  groupThousands,
  isCniError,
  listProblems,
  MAX_MESSAGE_CHARS,
  valueAt,
} from '../../../src/cni/errors';

describe('CniError', () => {
  it('carries code, message, details and cause', () => {
    const cause = new Error('EPERM');
    const e = new CniError(ErrorCode.SystemCall, 'setns failed', { details: 'errno 1', cause });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('CniError');
    expect(e.code).toBe(100);
    expect(e.message).toBe('setns failed');
    expect(e.details).toBe('errno 1');
    expect(e.cause).toBe(cause);
  });

  it('serialises to the spec error object', () => {
    const e = new CniError(ErrorCode.InvalidConfig, 'bad', { details: 'more' });
    expect(e.toSpec('0.4.0')).toEqual({ cniVersion: '0.4.0', code: 7, msg: 'bad', details: 'more' });
  });

  it('omits details and never serialises the cause or stack', () => {
    const e = new CniError(ErrorCode.InvalidEnvironment, 'bad env', { cause: new Error('inner') });
    const spec = e.toSpec('1.1.0');
    expect(spec).toEqual({ cniVersion: '1.1.0', code: 4, msg: 'bad env' });
    expect(Object.keys(spec)).not.toContain('details');
    expect(JSON.stringify(spec)).not.toContain('inner');
  });

  it('cuts msg and details longer than 4096 characters, saying how much was cut', () => {
    const e = new CniError(ErrorCode.InvalidConfig, 'm'.repeat(5000), { details: 'd'.repeat(4097) });
    const spec = e.toSpec('1.1.0');
    expect(spec.msg).toHaveLength(MAX_MESSAGE_CHARS);
    expect(spec.msg.endsWith(' … (904 more characters)')).toBe(true);
    expect(spec.details).toHaveLength(MAX_MESSAGE_CHARS);
    expect(spec.details?.endsWith(' … (1 more characters)')).toBe(true);
    expect(new CniError(7, 'x'.repeat(4096)).toSpec('1.1.0').msg).toBe('x'.repeat(4096));
  });

  it('has no own cause when none is given', () => {
    expect('cause' in new CniError(1, 'x')).toBe(false);
  });
});

describe('ErrorCode', () => {
  it('keeps the spec and plugin numbers', () => {
    expect(ErrorCode).toMatchObject({
      IncompatibleVersion: 1,
      UnsupportedField: 2,
      UnknownContainer: 3,
      InvalidEnvironment: 4,
      IoFailure: 5,
      DecodeFailure: 6,
      InvalidConfig: 7,
      TryAgainLater: 11,
      NotAvailable: 50,
      NotAvailableLimited: 51,
      SystemCall: 100,
      InterfaceNotFound: 101,
      AddressMissing: 102,
      MacMismatch: 103,
      SendFailed: 104,
      StateFailure: 105,
      AddressConflict: 106,
      Internal: 999,
    });
  });
});

describe('isCniError', () => {
  it('accepts CniError instances', () => {
    expect(isCniError(new CniError(3, 'gone'))).toBe(true);
  });

  it('accepts a CniError from another copy of the module', () => {
    class CniError extends Error {
      override name = 'CniError';
      code = 5;
      toSpec() {
        return {};
      }
    }
    expect(isCniError(new CniError('x'))).toBe(true);
  });

  const toSpec = () => ({});
  it.each([
    ['an Error', new Error('x')],
    ['a plain object', { name: 'CniError', code: 1, message: 'x', toSpec }],
    ['an Error named CniError alone', Object.assign(new Error('x'), { name: 'CniError' })],
    ['an Error with code and toSpec, not named CniError', Object.assign(new Error('x'), { code: 1, toSpec })],
    ['a CniError-named Error without a numeric code', Object.assign(new Error('x'), { name: 'CniError', toSpec })],
    ['a CniError-named Error without toSpec', Object.assign(new Error('x'), { name: 'CniError', code: 1 })],
    ['undefined', undefined],
    ['a string', 'CniError'],
  ])('rejects %s', (_, value) => {
    expect(isCniError(value)).toBe(false);
  });
});

describe('field paths', () => {
  it('names a field by its keys and indexes', () => {
    expect(fieldProblem(['prevResult', 'ips', 1, 'address'], 'p', 1)).toBe('"prevResult.ips[1].address" p (got 1)');
    expect(fieldProblem(['interfaces', 0], 'p', 1)).toBe('"interfaces[0]" p (got 1)');
    expect(fieldProblem([0, 'a'], 'p', 1)).toBe('"[0].a" p (got 1)');
    expect(fieldProblem([], 'p', 1)).toBe('"" p (got 1)');
  });

  it('describes values as short JSON', () => {
    expect(describeValue(11)).toBe('11');
    expect(describeValue('x')).toBe('"x"');
    expect(describeValue(undefined)).toBe('nothing');
    expect(describeValue('a'.repeat(100))).toBe(`"${'a'.repeat(56)}...`);
    expect(describeValue('a'.repeat(58))).toBe(`"${'a'.repeat(58)}"`); // 60 characters: whole
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
