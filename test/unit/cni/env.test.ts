import { describe, expect, it } from 'vitest';
import { ifnameProblem, parseCniArgs, parseEnv, podOf } from '../../../src/cni/env';
import { cniError } from '../../support/cni-errors';

const ADD_ENV = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'c0ffee-1',
  CNI_NETNS: '/var/run/netns/pod',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
};

const envError = (env: Record<string, string | undefined>) => cniError(() => parseEnv(env));

describe('parseEnv', () => {
  const noArgs = { args: { raw: {} } };
  it.each([
    [
      'reads the ADD variables',
      ADD_ENV,
      { command: 'ADD', containerId: 'c0ffee-1', netns: '/var/run/netns/pod', ifname: 'eth0', ...noArgs },
    ],
    ['needs only CNI_COMMAND for VERSION', { CNI_COMMAND: 'VERSION' }, { command: 'VERSION', ...noArgs }],
    [
      'ignores container variables for GC',
      { ...ADD_ENV, CNI_COMMAND: 'GC', CNI_IFNAME: 'bad/name' },
      { command: 'GC', ...noArgs },
    ],
    ['needs only CNI_COMMAND for STATUS', { CNI_COMMAND: 'STATUS' }, { command: 'STATUS', ...noArgs }],
    [
      'lets DEL go without CNI_NETNS',
      { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0' },
      { command: 'DEL', containerId: 'abc', ifname: 'eth0', ...noArgs },
    ],
  ])('%s', (_what, env, parsed) => {
    expect(parseEnv(env)).toEqual(parsed);
  });

  it('shows a long invalid value cut short, not whole', () => {
    const e = envError({ ...ADD_ENV, CNI_CONTAINERID: `-${'x'.repeat(100_000)}` });
    expect(e.code).toBe(4);
    expect(e.message.length).toBeLessThan(300);
    expect(e.message).toMatch(/^invalid environment: CNI_CONTAINERID must start .* \(got "-x+\.\.\.\)$/);
  });

  const badId =
    'CNI_CONTAINERID must start with a letter or digit and hold only letters, digits, "_", "." and "-" (got "-x")';
  it.each([
    [
      'reports every missing variable in one code-4 error',
      { CNI_COMMAND: 'ADD', CNI_IFNAME: '' },
      'CNI_CONTAINERID is required for ADD; CNI_NETNS is required for ADD; CNI_IFNAME is required for ADD',
    ],
    [
      'reports missing and invalid variables together',
      { CNI_COMMAND: 'CHECK', CNI_CONTAINERID: '-x', CNI_NETNS: 'var/run/netns/x' },
      `${badId}; CNI_NETNS must be an absolute path (got "var/run/netns/x"); CNI_IFNAME is required for CHECK`,
    ],
    ['requires CNI_COMMAND', {}, 'CNI_COMMAND is required'],
    ['requires CNI_COMMAND not empty', { CNI_COMMAND: '' }, 'CNI_COMMAND is required'],
    [
      'rejects an unknown CNI_COMMAND with code 4',
      { ...ADD_ENV, CNI_COMMAND: 'add' },
      'CNI_COMMAND must be one of ADD, DEL, CHECK, VERSION, STATUS, GC (got "add")',
    ],
    [
      'validates CNI_NETNS on DEL when it is given',
      { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'a', CNI_IFNAME: 'eth0', CNI_NETNS: 'pod' },
      'CNI_NETNS must be an absolute path (got "pod")',
    ],
    [
      'names the interface problem',
      { ...ADD_ENV, CNI_IFNAME: 'eth0:1' },
      'CNI_IFNAME must not contain "/", ":" or whitespace (got "eth0:1")',
    ],
    [
      'reports a bad CNI_ARGS together with other problems',
      { ...ADD_ENV, CNI_ARGS: 'IgnoreUnknown=1;ANNOUNCE=yes', CNI_IFNAME: undefined },
      'CNI_IFNAME is required for ADD; CNI_ARGS ANNOUNCE must be "true" or "false" (got "yes")',
    ],
  ])('%s', (_what, env, problem) => {
    const e = envError(env);
    expect([e.code, e.message]).toEqual([4, `invalid environment: ${problem}`]);
  });

  it.each([
    ['a', true],
    ['A9_.-z', true],
    ['0', true],
    ['_a', false],
    ['.a', false],
    ['a b', false],
    ['a/b', false],
    ['a:b', false],
  ])('container ID %j valid: %s', (id, ok) => {
    const run = () => parseEnv({ ...ADD_ENV, CNI_CONTAINERID: id });
    if (ok) expect(run()).toMatchObject({ containerId: id });
    else expect(run).toThrow(/CNI_CONTAINERID must start with a letter or digit/);
  });

  it('parses CNI_ARGS', () => {
    const env = parseEnv({ ...ADD_ENV, CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAME=web-0;ANNOUNCE=false' });
    expect(env.args).toEqual({
      announce: false,
      raw: { IgnoreUnknown: '1', K8S_POD_NAME: 'web-0', ANNOUNCE: 'false' },
    });
  });
});

describe('parseCniArgs', () => {
  it('accepts an empty string and a trailing ";"', () => {
    expect(parseCniArgs('')).toEqual({ ok: true, value: { raw: {} } });
    expect(parseCniArgs('A=1;')).toEqual({ ok: true, value: { raw: { A: '1' } } });
  });

  it('keeps "=" inside values and lets the last repeated key win', () => {
    expect(parseCniArgs('A=x=y;A=z;B=')).toEqual({ ok: true, value: { raw: { A: 'z', B: '' } } });
  });

  it.each([
    ['ANNOUNCE=true', true],
    ['ANNOUNCE=false', false],
  ])('%s', (text, announce) => {
    expect(parseCniArgs(text)).toEqual({ ok: true, value: { announce, raw: { ANNOUNCE: String(announce) } } });
  });

  it('reads MAC= as the MAC the runtime chose, and an empty one as none', () => {
    expect(parseCniArgs('IgnoreUnknown=1;MAC=02:c0:ff:ee:00:05')).toEqual({
      ok: true,
      value: { mac: '02:c0:ff:ee:00:05', raw: { IgnoreUnknown: '1', MAC: '02:c0:ff:ee:00:05' } },
    });
    expect(parseCniArgs('MAC=')).toEqual({ ok: true, value: { raw: { MAC: '' } } });
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
    expect(podOf({ K8S_POD_NAME: 'p' })).toStrictEqual({ name: 'p' });
    expect(podOf({ K8S_POD_NAMESPACE: 'ns' })).toStrictEqual({ namespace: 'ns' });
    expect(podOf({ IgnoreUnknown: '1' })).toBeUndefined();
  });
});

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
