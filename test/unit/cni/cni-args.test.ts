import { describe, expect, it } from 'vitest';
import { parseCniArgs, podOf } from '../../../src/cni/cni-args';

describe('parseCniArgs', () => {
  it('accepts an empty string and a trailing ";"', () => {
    expect(parseCniArgs('')).toEqual({ ok: true, args: { raw: {} } });
    expect(parseCniArgs('A=1;')).toEqual({ ok: true, args: { raw: { A: '1' } } });
  });

  it('keeps "=" inside values and lets the last repeated key win', () => {
    expect(parseCniArgs('A=x=y;A=z;B=')).toEqual({ ok: true, args: { raw: { A: 'z', B: '' } } });
  });

  it.each([
    ['ANNOUNCE=true', true],
    ['ANNOUNCE=false', false],
  ])('%s', (text, announce) => {
    expect(parseCniArgs(text)).toEqual({ ok: true, args: { announce, raw: { ANNOUNCE: String(announce) } } });
  });

  it('reads MAC= as the MAC the runtime chose, and an empty one as none', () => {
    expect(parseCniArgs('IgnoreUnknown=1;MAC=02:c0:ff:ee:00:05')).toEqual({
      ok: true,
      args: { mac: '02:c0:ff:ee:00:05', raw: { IgnoreUnknown: '1', MAC: '02:c0:ff:ee:00:05' } },
    });
    expect(parseCniArgs('MAC=')).toEqual({ ok: true, args: { raw: { MAC: '' } } });
  });

  it('cuts a long bad pair short in the problem', () => {
    const parsed = parseCniArgs(`A=1;${'y'.repeat(100_000)}`);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem).toBe(`has a pair without "=" (got "${'y'.repeat(56)}...)`);
  });

  it.each([
    ['A=1;oops', 'has a pair without "=" (got "oops")'],
    ['=1', 'has a pair with an empty key (got "=1")'],
    ['ANNOUNCE=1', 'ANNOUNCE must be "true" or "false" (got "1")'],
    ['ANNOUNCE=True', 'ANNOUNCE must be "true" or "false" (got "True")'],
    ['ANNOUNCE=', 'ANNOUNCE must be "true" or "false" (got "")'],
  ])('rejects %j', (text, problem) => {
    expect(parseCniArgs(text)).toEqual({ ok: false, problem });
  });
});

describe('podOf', () => {
  it('names the pod from K8S_POD_NAMESPACE and K8S_POD_NAME, either alone; nothing without both', () => {
    expect(podOf({ IgnoreUnknown: '1', K8S_POD_NAMESPACE: 'ns', K8S_POD_NAME: 'p', K8S_POD_UID: 'u' })).toEqual({
      namespace: 'ns',
      name: 'p',
    });
    expect(podOf({ K8S_POD_NAME: 'p' })).toEqual({ name: 'p' });
    expect(podOf({ K8S_POD_NAMESPACE: 'ns' })).toEqual({ namespace: 'ns' });
    expect(podOf({ IgnoreUnknown: '1' })).toBeUndefined();
  });
});
