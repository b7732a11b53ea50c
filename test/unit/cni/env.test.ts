import { describe, expect, it } from 'vitest';
import { ENV_RULES, parseEnv } from '../../../src/cni/env';
import { CniError } from '../../../src/cni/errors';

const ADD_ENV = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'c0ffee-1',
  CNI_NETNS: '/var/run/netns/pod',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
};

function envError(env: Record<string, string | undefined>): CniError {
  try {
    parseEnv(env);
  } catch (e) {
    expect(e).toBeInstanceOf(CniError);
    return e as CniError;
  }
  throw new Error('parseEnv did not throw');
}

describe('parseEnv', () => {
  it('reads the ADD variables', () => {
    expect(parseEnv(ADD_ENV)).toEqual({
      command: 'ADD',
      containerId: 'c0ffee-1',
      netns: '/var/run/netns/pod',
      ifname: 'eth0',
      args: { raw: {} },
    });
  });

  it('needs only CNI_COMMAND for VERSION', () => {
    expect(parseEnv({ CNI_COMMAND: 'VERSION' })).toEqual({ command: 'VERSION', args: { raw: {} } });
  });

  it('ignores container variables for STATUS and GC', () => {
    expect(parseEnv({ ...ADD_ENV, CNI_COMMAND: 'GC', CNI_IFNAME: 'bad/name' })).toEqual({
      command: 'GC',
      args: { raw: {} },
    });
    expect(parseEnv({ CNI_COMMAND: 'STATUS' })).toEqual({ command: 'STATUS', args: { raw: {} } });
  });

  it('lets DEL go without CNI_NETNS', () => {
    expect(parseEnv({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0' })).toEqual({
      command: 'DEL',
      containerId: 'abc',
      ifname: 'eth0',
      args: { raw: {} },
    });
  });

  it('shows a long invalid value cut short, not whole', () => {
    const e = envError({ ...ADD_ENV, CNI_CONTAINERID: `-${'x'.repeat(100_000)}` });
    expect(e.code).toBe(4);
    expect(e.message.length).toBeLessThan(300);
    expect(e.message).toMatch(/^invalid environment: CNI_CONTAINERID must start .* \(got "-x+\.\.\.\)$/);
  });

  it('reports every missing variable in one code-4 error', () => {
    const e = envError({ CNI_COMMAND: 'ADD', CNI_IFNAME: '' });
    expect(e.code).toBe(4);
    expect(e.message).toBe(
      'invalid environment: CNI_CONTAINERID is required for ADD; CNI_NETNS is required for ADD; ' +
        'CNI_IFNAME is required for ADD',
    );
  });

  it('reports missing and invalid variables together', () => {
    const e = envError({ CNI_COMMAND: 'CHECK', CNI_CONTAINERID: '-x', CNI_NETNS: 'var/run/netns/x' });
    expect(e.code).toBe(4);
    expect(e.message).toBe(
      'invalid environment: CNI_CONTAINERID must start with a letter or digit and hold only letters, ' +
        'digits, "_", "." and "-" (got "-x"); ' +
        'CNI_NETNS must be an absolute path (got "var/run/netns/x"); CNI_IFNAME is required for CHECK',
    );
  });

  it('requires CNI_COMMAND', () => {
    const e = envError({});
    expect([e.code, e.message]).toEqual([4, 'invalid environment: CNI_COMMAND is required']);
  });

  it('rejects an unknown CNI_COMMAND with code 4', () => {
    const e = envError({ ...ADD_ENV, CNI_COMMAND: 'add' });
    expect(e.code).toBe(4);
    expect(e.message).toBe(
      'invalid environment: CNI_COMMAND must be one of ADD, DEL, CHECK, VERSION, STATUS, GC (got "add")',
    );
  });

  it('validates CNI_NETNS on DEL when it is given', () => {
    const e = envError({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'a', CNI_IFNAME: 'eth0', CNI_NETNS: 'pod' });
    expect(e.message).toBe('invalid environment: CNI_NETNS must be an absolute path (got "pod")');
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
    if (ok) expect(run().containerId).toBe(id);
    else expect(run).toThrow(/CNI_CONTAINERID must start with a letter or digit/);
  });

  it('names the interface problem', () => {
    const e = envError({ ...ADD_ENV, CNI_IFNAME: 'eth0:1' });
    expect(e.message).toBe('invalid environment: CNI_IFNAME must not contain "/", ":" or whitespace (got "eth0:1")');
  });

  it('parses CNI_ARGS', () => {
    const env = parseEnv({ ...ADD_ENV, CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAME=web-0;ANNOUNCE=false' });
    expect(env.args).toEqual({
      announce: false,
      raw: { IgnoreUnknown: '1', K8S_POD_NAME: 'web-0', ANNOUNCE: 'false' },
    });
  });

  it('reports a bad CNI_ARGS together with other problems', () => {
    const e = envError({ ...ADD_ENV, CNI_ARGS: 'IgnoreUnknown=1;ANNOUNCE=yes', CNI_IFNAME: undefined });
    expect(e.code).toBe(4);
    expect(e.message).toBe(
      'invalid environment: CNI_IFNAME is required for ADD; CNI_ARGS ANNOUNCE must be "true" or "false" (got "yes")',
    );
  });

  it('has one rule per variable', () => {
    expect(ENV_RULES.map((r) => r.name)).toEqual(['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_ARGS']);
  });
});
