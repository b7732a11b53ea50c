import { describe, expect, it } from 'vitest';
import {
  crashReply,
  dispatch,
  type AddRequest,
  type CheckRequest,
  type CniIo,
  type CniPlugin,
  type DelRequest,
  type GcRequest,
  type StatusRequest,
} from '../../../src/cni/dispatch';
import { CniError, ErrorCode } from '../../../src/cni/errors';
import { formatResult } from '../../../src/cni/result';
import { SUPPORTED_VERSIONS, type CniVersion } from '../../../src/cni/versions';

const ATTACH_ENV = {
  CNI_CONTAINERID: 'c0ffee',
  CNI_NETNS: '/var/run/netns/pod',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
};

const PREV_RESULT = {
  cniVersion: '1.0.0',
  interfaces: [
    { name: 'cni-t0', mac: '52:54:00:aa:bb:cc' },
    { name: 'eth0', mac: '86:03:17:7a:eb:6e', sandbox: '/var/run/netns/pod' },
  ],
  ips: [
    { address: '10.88.0.5/24', gateway: '10.88.0.1', interface: 1 },
    { address: 'fd00:88::5/64', interface: 1 },
  ],
  routes: [{ dst: '0.0.0.0/0' }],
  dns: { nameservers: ['10.88.0.1'] },
  'x-custom': 42,
};

const config = (fields: Record<string, unknown> = {}) => ({
  cniVersion: '1.1.0',
  name: 'podnet',
  type: 'announcer',
  prevResult: PREV_RESULT,
  ...fields,
});

interface Calls {
  add: AddRequest[];
  del: DelRequest[];
  check: CheckRequest[];
  status: StatusRequest[];
  gc: GcRequest[];
}

/** A plugin that records its calls; ADD prints prevResult back. Pass overrides to make a command throw. */
function fakePlugin(overrides: Partial<CniPlugin> = {}): { plugin: CniPlugin; calls: Calls } {
  const calls: Calls = { add: [], del: [], check: [], status: [], gc: [] };
  const plugin: CniPlugin = {
    add: async (req) => {
      calls.add.push(req);
      return overrides.add ? overrides.add(req) : formatResult(req.prevResult, req.cniVersion);
    },
    del: async (req) => {
      calls.del.push(req);
      await overrides.del?.(req);
    },
    check: async (req) => {
      calls.check.push(req);
      await overrides.check?.(req);
    },
    status: async (req) => {
      calls.status.push(req);
      await overrides.status?.(req);
    },
    gc: async (req) => {
      calls.gc.push(req);
      await overrides.gc?.(req);
    },
  };
  return { plugin, calls };
}

interface Run {
  exitCode: number;
  stdout: string[];
  /** The one JSON document on stdout, if any. */
  doc: Record<string, unknown> | undefined;
  calls: Calls;
}

/** Runs dispatch on `env` and `stdin` (its text, a JSON document, or a reader); what it printed is in `stdout`. */
async function run(
  env: Record<string, string | undefined>,
  stdin: string | object | CniIo['readStdin'],
  overrides: Partial<CniPlugin> = {},
): Promise<Run> {
  const stdout: string[] = [];
  const text = typeof stdin === 'string' ? stdin : JSON.stringify(stdin);
  const readStdin = typeof stdin === 'function' ? (stdin as CniIo['readStdin']) : async () => Buffer.from(text);
  const io: CniIo = { env, readStdin, writeStdout: (t) => stdout.push(t) };
  const { plugin, calls } = fakePlugin(overrides);
  const exitCode = await dispatch(io, plugin);
  expect(stdout.length).toBeLessThanOrEqual(1);
  const doc = stdout.length === 1 ? (JSON.parse(stdout[0] ?? '') as Record<string, unknown>) : undefined;
  return { exitCode, stdout, doc, calls };
}

async function expectError(
  env: Record<string, string | undefined>,
  stdin: string | object,
  code: number,
  msg: string,
  cniVersion = '1.1.0',
): Promise<Run> {
  const r = await run(env, stdin);
  expect(r.exitCode).toBe(1);
  expect(r.doc).toEqual({ cniVersion, code, msg });
  return r;
}

const ADD = { CNI_COMMAND: 'ADD', ...ATTACH_ENV };
const CHECK = { CNI_COMMAND: 'CHECK', ...ATTACH_ENV };
const DEL = { CNI_COMMAND: 'DEL', ...ATTACH_ENV };

describe('VERSION', () => {
  it('echoes a supported cniVersion from stdin', async () => {
    const r = await run({ CNI_COMMAND: 'VERSION' }, { cniVersion: '0.4.0' });
    expect(r.exitCode).toBe(0);
    expect(r.doc).toEqual({ cniVersion: '0.4.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] });
  });

  it.each([['{"cniVersion":"0.2.0"}'], [''], ['not json'], ['null']])('answers 1.1.0 for stdin %j', async (stdin) => {
    const r = await run({ CNI_COMMAND: 'VERSION' }, stdin);
    expect(r.exitCode).toBe(0);
    expect(r.doc?.cniVersion).toBe('1.1.0');
  });

  it.each([
    ['an unreadable stdin', () => Promise.reject(new Error('EBADF'))],
    ['a stdin over the limit', async (max: number) => new Uint8Array(max + 1).fill(0x20)],
  ])('answers 1.1.0 for %s', async (_what, readStdin) => {
    expect(await run({ CNI_COMMAND: 'VERSION' }, readStdin)).toMatchObject({
      exitCode: 0,
      doc: { cniVersion: '1.1.0' },
    });
  });
});

describe('ADD', () => {
  it('hands the plugin a complete request and prints its result', async () => {
    const r = await run({ ...ADD, CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAME=web' }, config({ count: 4 }));
    expect(r.exitCode).toBe(0);
    expect(r.stdout[0]?.endsWith('\n')).toBe(true);
    const req = r.calls.add[0];
    expect(req?.env).toEqual({
      command: 'ADD',
      containerId: 'c0ffee',
      netns: '/var/run/netns/pod',
      ifname: 'eth0',
      args: { raw: { IgnoreUnknown: '1', K8S_POD_NAME: 'web' } },
    });
    expect(req?.cniVersion).toBe('1.1.0');
    expect(req?.config.count).toBe(4);
    expect(req?.options).toMatchObject({ enabled: true, count: 4 });
    expect(req?.prevResult.ips.map((ip) => ip.address)).toEqual(['10.88.0.5', 'fd00:88::5']);
    expect(r.doc).toEqual({ ...PREV_RESULT, cniVersion: '1.1.0' });
  });

  it.each(SUPPORTED_VERSIONS)('passes prevResult through in %s', async (v: CniVersion) => {
    const r = await run(ADD, config({ cniVersion: v }));
    expect(r.exitCode).toBe(0);
    const legacy = v.startsWith('0.');
    expect(r.doc).toEqual({
      ...PREV_RESULT,
      cniVersion: v,
      ips: legacy
        ? [
            { version: '4', ...PREV_RESULT.ips[0] },
            { version: '6', ...PREV_RESULT.ips[1] },
          ]
        : PREV_RESULT.ips,
    });
  });

  it.each([
    [
      'without prevResult',
      { prevResult: undefined },
      '"prevResult" is required: announcer is a chained plugin and must follow a main plugin such as bridge or macvlan',
    ],
    [
      'on a bad CIDR in prevResult',
      {
        cniVersion: '0.4.0',
        prevResult: { ...PREV_RESULT, ips: [PREV_RESULT.ips[0], { address: 'fd00:88::5', interface: 1 }] },
      },
      '"prevResult.ips[1].address" must be an IP address with a ' +
        'prefix length, such as "10.88.0.5/24" (got "fd00:88::5")',
    ],
    [
      'naming a bad option, in the config version',
      { cniVersion: '0.3.1', count: 11 },
      '"count" must be an integer from 0 to 10 (got 11)',
    ],
  ])('fails with 7 %s, before the plugin runs', async (_when, fields, problem) => {
    const version = (fields as { cniVersion?: string }).cniVersion ?? '1.1.0';
    const r = await expectError(ADD, config(fields), 7, `invalid config: ${problem}`, version);
    expect(r.calls.add).toEqual([]);
  });

  it('prints the plugin result as is', async () => {
    const r = await run(ADD, config(), {
      add: async () => ({ cniVersion: '1.1.0', interfaces: [{ name: 'eth0', mac: '0a:58:0a:58:00:05' }] }),
    });
    expect(r.doc).toEqual({ cniVersion: '1.1.0', interfaces: [{ name: 'eth0', mac: '0a:58:0a:58:00:05' }] });
  });
});

describe('env errors (code 4)', () => {
  const missing = (command: string) =>
    ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'].map((v) => `${v} is required for ${command}`).join('; ');
  it.each([
    ['every missing variable together', { CNI_COMMAND: 'ADD', CNI_PATH: '/opt/cni/bin' }, config(), missing('ADD')],
    ['env before stdin (stdin is not JSON)', { CNI_COMMAND: 'CHECK' }, 'not json', missing('CHECK')],
  ])('reports %s', async (_what, env, stdin, problem) => {
    await expectError(env, stdin, 4, `invalid environment: ${problem}`);
  });
});

describe('stdin and version errors', () => {
  it('fails with 6 when stdin is not JSON', async () => {
    const r = await run(ADD, '{"cniVersion": ');
    expect([r.exitCode, r.doc]).toEqual([
      1,
      { cniVersion: '1.1.0', code: 6, msg: expect.stringMatching(/^stdin is not JSON: /) },
    ]);
  });

  const unsupported = (shown: string) =>
    `unsupported cniVersion ${shown} (supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0)`;
  it.each([
    ['6 on empty stdin', DEL, '  \n', 6, 'stdin is empty: expected the network config as JSON'],
    ['1 on cniVersion "0.2.0"', ADD, config({ cniVersion: '0.2.0' }), 1, unsupported('"0.2.0"')],
    ['1 on cniVersion "2.0.0"', ADD, config({ cniVersion: '2.0.0' }), 1, unsupported('"2.0.0"')],
    ['1 on cniVersion 1', ADD, config({ cniVersion: 1 }), 1, unsupported('1')],
    ['7 without cniVersion', ADD, config({ cniVersion: undefined }), 7, 'invalid config: "cniVersion" is required'],
    [
      '1, the version checked before the rest',
      ADD,
      config({ cniVersion: '0.2.0', count: 11 }),
      1,
      unsupported('"0.2.0"'),
    ],
  ])('fails with %s', async (_what, env, stdin, code, msg) => {
    await expectError(env, stdin, code, msg);
  });

  it('fails with 5 when stdin cannot be read', async () => {
    const r = await run(ADD, () => Promise.reject(new Error('EIO')));
    expect([r.exitCode, r.doc]).toEqual([
      1,
      { cniVersion: '1.1.0', code: 5, msg: 'cannot read the network config from stdin: EIO' },
    ]);
  });
});

describe('CHECK', () => {
  it('succeeds silently', async () => {
    const r = await run(CHECK, config({ cniVersion: '0.4.0' }));
    expect([r.exitCode, r.stdout]).toEqual([0, []]);
    expect(r.calls.check[0]?.prevResult.interfaces[1]?.name).toBe('eth0');
  });

  it.each(['0.3.0', '0.3.1'])('fails with 1 on %s', async (v) => {
    const r = await expectError(
      CHECK,
      config({ cniVersion: v }),
      1,
      `CHECK needs cniVersion 0.4.0 or later (the config has ${v})`,
      v,
    );
    expect(r.calls.check).toEqual([]);
  });

  it('fails with 7 without prevResult', async () => {
    await expectError(
      CHECK,
      config({ prevResult: undefined }),
      7,
      'invalid config: "prevResult" is required for CHECK',
    );
  });
});

describe('DEL', () => {
  it('succeeds silently without CNI_NETNS and without prevResult', async () => {
    const r = await run(
      { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c0ffee', CNI_IFNAME: 'eth0' },
      config({ prevResult: undefined }),
    );
    expect([r.exitCode, r.stdout]).toEqual([0, []]);
    const req = r.calls.del[0];
    expect(req?.env.netns).toBeUndefined();
    expect(req?.prevResult).toBeUndefined();
    expect(req?.prevResultError).toBeUndefined();
  });

  it('hands over prevResult when there is one', async () => {
    const r = await run(DEL, config());
    expect(r.calls.del[0]?.prevResult?.ips).toHaveLength(2);
  });

  it('does not fail on an invalid prevResult, and says why it was dropped', async () => {
    const r = await run(DEL, config({ prevResult: { ips: [{ address: 'bogus' }] } }));
    expect([r.exitCode, r.stdout]).toEqual([0, []]);
    const req = r.calls.del[0];
    expect(req?.prevResult).toBeUndefined();
    expect(req?.prevResultError?.code).toBe(7);
  });

  it('still cleans up when an option is invalid, with the fields cleanup needs', async () => {
    const kept = { stateDir: '/run/elsewhere', logFile: '/var/log/announcer.log', logLevel: 'debug' };
    const r = await run(DEL, config({ count: 99, ...kept }));
    expect([r.exitCode, r.stdout]).toEqual([0, []]);
    expect(r.calls.del[0]?.config).toMatchObject({ ...kept, count: 3 });
  });

  it('fails when even the fields cleanup needs are invalid', async () => {
    await expectError(
      DEL,
      config({ count: 99, stateDir: 'relative' }),
      7,
      'invalid config: "count" must be an integer from 0 to 10 (got 99); "stateDir" must be an absolute ' +
        'path (got "relative")',
    );
  });
});

describe("the plugin's errors", () => {
  const mac = 'eth0 has MAC 86:03:17:7a:eb:6e, expected 0a:58:0a:58:00:05';
  const gone = 'cannot remove /run/cni-announcer/c0ffee-eth0';
  const notWritable = 'stateDir /run/cni-announcer is not writable';
  const STATUS = { CNI_COMMAND: 'STATUS' };
  it.each([
    ['CHECK', 'its CniError', CHECK, new CniError(ErrorCode.MacMismatch, mac), { code: 103, msg: mac }],
    [
      'DEL',
      'its CniError with details',
      DEL,
      new CniError(ErrorCode.StateFailure, gone, { details: 'EACCES' }),
      { code: 105, msg: gone, details: 'EACCES' },
    ],
    [
      'STATUS',
      'its CniError',
      STATUS,
      new CniError(ErrorCode.NotAvailable, notWritable),
      { code: 50, msg: notWritable },
    ],
    ['ADD', 'a crash as 999', ADD, new Error('boom'), { code: 999, msg: 'internal error: boom' }],
    [
      'DEL',
      'any other error as 999',
      DEL,
      new TypeError('x is not a function'),
      { code: 999, msg: 'internal error: x is not a function' },
    ],
    ['DEL', 'a thrown non-Error value as 999', DEL, 'boom', { code: 999, msg: 'internal error: boom' }],
    [
      'ADD',
      'an Error without a message by its name',
      ADD,
      new RangeError(''),
      { code: 999, msg: 'internal error: RangeError' },
    ],
    [
      'ADD',
      'a value that cannot be made a string as unprintable',
      ADD,
      Object.create(null),
      { code: 999, msg: 'internal error: unprintable error' },
    ],
  ])(
    '%s reports %s: one error object in the config version, without a stack',
    async (command, _what, env, thrown, reply) => {
      const cniVersion = command === 'STATUS' ? '1.1.0' : '1.0.0';
      const r = await run(env, config({ cniVersion }), {
        [command.toLowerCase()]: async () => {
          throw thrown;
        },
      });
      expect(r.exitCode).toBe(1);
      expect(r.doc).toEqual({ cniVersion, ...reply });
      expect(r.stdout[0]).not.toMatch(/ at |\.ts/);
    },
  );
});

describe('STATUS and GC', () => {
  it('STATUS succeeds silently on 1.1.0 without container variables', async () => {
    const r = await run({ CNI_COMMAND: 'STATUS' }, config({ prevResult: undefined }));
    expect([r.exitCode, r.stdout]).toEqual([0, []]);
    expect(r.calls.status[0]?.env).toEqual({ command: 'STATUS', args: { raw: {} } });
    expect(r.calls.status[0]?.options.enabled).toBe(true);
  });

  it.each(['STATUS', 'GC'])('%s fails with 1 before 1.1.0', async (command) => {
    await expectError(
      { CNI_COMMAND: command },
      config({ cniVersion: '1.0.0' }),
      1,
      `${command} needs cniVersion 1.1.0 or later (the config has 1.0.0)`,
      '1.0.0',
    );
  });

  it('GC gets the union of both attachment lists', async () => {
    const r = await run(
      { CNI_COMMAND: 'GC' },
      config({
        'cni.dev/valid-attachments': [{ containerID: 'a', ifname: 'eth0' }],
        'cni.dev/attachments': [
          { containerID: 'a', ifname: 'eth0' },
          { containerID: 'b', ifname: 'net1', extra: 1 },
        ],
      }),
    );
    expect([r.exitCode, r.stdout]).toEqual([0, []]);
    expect(r.calls.gc[0]?.validAttachments).toEqual([
      { containerId: 'a', ifname: 'eth0' },
      { containerId: 'b', ifname: 'net1' },
    ]);
  });

  it('GC without an attachment list fails with 7 rather than cleaning up everything', async () => {
    const r = await expectError(
      { CNI_COMMAND: 'GC' },
      config(),
      7,
      'invalid config: "cni.dev/valid-attachments" is required for GC',
    );
    expect(r.calls.gc).toEqual([]);
  });
});

describe('option precedence: conflist, then what podOverrides lets the pod change; off wins', () => {
  it('applies the overrides podOverrides allows, ignores the rest, and hands ADD the notes', async () => {
    const r = await run(
      { ...ADD, CNI_ARGS: 'ANNOUNCE=false' },
      config({
        count: 1,
        arpOp: 'reply',
        podOverrides: ['count'],
        args: { cni: { announce: { count: 7, arpOp: 'both' } } },
      }),
    );
    const req = r.calls.add[0];
    expect(req?.options).toMatchObject({ enabled: false, count: 7, arpOp: 'reply' });
    expect(req?.notes).toContainEqual({
      level: 'warn',
      msg: 'ignoring a pod override',
      fields: { field: 'args.cni.announce.arpOp', value: 'both', reason: 'not allowed: podOverrides allows count' },
    });
  });
});

describe('limits: stdin size, message length', () => {
  it('asks the reader for at most 16 MiB and refuses more with 5 naming the limit', async () => {
    const asked: number[] = [];
    const r = await run(ADD, async (max: number) => (asked.push(max), new Uint8Array(max + 1).fill(0x20)));
    expect(asked).toEqual([16 * 1024 * 1024]);
    const msg = 'stdin holds more than 16 MiB (16777216 bytes), the most a network config may take';
    expect([r.exitCode, r.doc]).toEqual([1, { cniVersion: '1.1.0', code: 5, msg }]);
  });

  it('names the first 5 of 36,000 bad prevResult entries and counts the rest', async () => {
    const ips = Array.from({ length: 36_000 }, (_, i) => ({ address: `bogus-${i}` }));
    const r = await run(ADD, config({ prevResult: { ...PREV_RESULT, ips } }));
    expect(r.doc?.code).toBe(7);
    const msg = String(r.doc?.msg);
    expect(msg.length).toBeLessThan(1000);
    expect(msg).toContain('"prevResult.ips[0].address"');
    expect(msg).toContain('"prevResult.ips[4].address"');
    expect(msg).not.toContain('"prevResult.ips[5].address"');
    expect(msg.endsWith('; … and 35,995 more')).toBe(true);
  });
});

describe('the top level is total', () => {
  it('a result that cannot be encoded becomes one 999 error object', async () => {
    const r = await run(ADD, config(), { add: async () => ({ big: 1n }) });
    expect(r.exitCode).toBe(1);
    expect(r.doc).toMatchObject({ cniVersion: '1.1.0', code: 999 });
    expect(String(r.doc?.msg)).toMatch(/^internal error: cannot encode the reply as JSON: /);
  });

  it('a result nested too deep for JSON.stringify becomes one 999 error object', async () => {
    let deep: unknown = {};
    for (let i = 0; i < 200_000; i++) deep = [deep];
    const r = await run(ADD, config(), { add: async () => ({ deep }) });
    expect(r.exitCode).toBe(1);
    expect(r.doc).toMatchObject({ code: 999 });
    expect(r.stdout[0]).not.toMatch(/ at /);
  });

  it('an error whose message cannot be read still gives one error object', async () => {
    const hostile = new Proxy(new Error('x'), {
      get() {
        throw new Error('no');
      },
    });
    const r = await run(ADD, config(), {
      add: async () => {
        throw hostile;
      },
    });
    expect(r.exitCode).toBe(1);
    expect(r.doc).toEqual({ cniVersion: '1.1.0', code: 999, msg: 'internal error: unprintable error' });
  });

  it('returns 1 when stdout cannot be written', async () => {
    const readStdin = async () => Buffer.from(JSON.stringify(config()));
    const writeStdout = () => {
      throw new Error('EPIPE');
    };
    expect(await dispatch({ env: ADD, readStdin, writeStdout }, fakePlugin().plugin)).toBe(1);
  });

  it('crashReply is a code-999 object without a stack', () => {
    const text = crashReply(new TypeError('boom'));
    expect(text.endsWith('\n')).toBe(true);
    expect(JSON.parse(text)).toEqual({ cniVersion: '1.1.0', code: 999, msg: 'internal error: boom' });
  });
});

describe('internal errors', () => {
  it.each([undefined, null])('treats an ADD result of %s as internal', async (result) => {
    const r = await run(ADD, config(), { add: async () => result as unknown as Record<string, unknown> });
    expect(r.doc).toEqual({ cniVersion: '1.1.0', code: 999, msg: 'internal error: ADD produced no result object' });
  });
});

describe('the pod annotation (containerd runtimeConfig, with the capability declared)', () => {
  const CAP = 'io.kubernetes.cri.pod-annotations';
  const annotated = (text: string) =>
    config({ capabilities: { [CAP]: true }, runtimeConfig: { [CAP]: { 'cni-announcer/announce': text } } });

  it('fails ADD with code 7 naming the annotation, before the plugin runs', async () => {
    const r = await expectError(
      ADD,
      annotated('{"count":'),
      7,
      'invalid config: runtimeConfig["io.kubernetes.cri.pod-annotations"]["cni-announcer/announce"] is not JSON: ' +
        'it must be "false", "true" or the JSON text of an object of option overrides (got "{\\"count\\":")',
    );
    expect(r.calls.add).toEqual([]);
  });

  it('never fails DEL: the pod must still be torn down', async () => {
    const r = await run(DEL, annotated('{"count":'));
    expect(r.exitCode).toBe(0);
    expect(r.calls.del).toHaveLength(1);
  });
});
