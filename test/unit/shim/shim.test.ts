// The shim: runShim with scripted outcomes (what it forwards and for how long it waits, what it prints, when it
// starts an announcer, what each command returns when the announcer cannot answer); the exchange against a fake
// announcer on a real unix socket (the node:net twin), with a clock whose timers fire when the test says, so no test
// waits for a deadline to pass; askAnnouncer, which never starts one; the boot clock and the Bun twin outside Bun.
import { afterEach, describe, expect, it } from 'vitest';
import {
  askAnnouncer,
  bootClock,
  CONTROL_WAIT_MS,
  exchange,
  nextStep,
  type Outcome,
  RETRY_MS,
  realShimDeps,
  runShim,
  type ShimDeps,
} from '../../../src/shim/shim';
import { StateDirError } from '../../../src/shim/unavailable';
import {
  BRIEF_MS,
  encodeLine,
  MARGIN_MS,
  MAX_FORWARDED_STDIN,
  parseObject,
  type RequestBody,
  START_MS,
  stateDirOf,
  STOP_MS,
  waitMsOf,
  WIRE_VERSION,
} from '../../../src/protocol';
import {
  DEFAULT_ADD_WAIT_MS,
  DEFAULT_GATEWAY_CHECK_MS,
  DEFAULT_PROBE_MS,
  DEFAULT_STATE_DIR,
  MAX_GATEWAY_CHECK_MS,
  MAX_PROBE_MS,
} from '../../../src/cni/option-bounds';
import { OPTIONS } from '../../../src/cni/option-schema';
import type { Started } from '../../../src/shim/start';
import { fakeAnnouncer, type FakeAnnouncer, fakeClock, fireOnly, type Taken, until } from './fakes';
import { useTempDir } from '../../support/temp-dir';
import { closeSync, mkdirSync, openSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StreamError } from '../../../src/sys/sys-error';
import type { ConnectUnix } from '../../../src/sys/unix-stream';
import { spawn } from 'node:child_process';
import { connectUnix } from '../../../src/sys/unix-stream';
import { connectUnix as bunConnect } from '../../../src/sys/unix-stream.bun';

const CONFIG = '{"cniVersion":"1.0.0","name":"n","type":"announcer","stateDir":"/state"}';
const ENV = { CNI_COMMAND: 'ADD', CNI_NETNS: '/run/netns/x', PATH: '/bin', LD_LIBRARY_PATH: '/x:' };

/** A shim run whose exchanges answer from `outcomes` in turn (the last one repeats). */
function harness(
  outcomes: Outcome[],
  start: () => Promise<Started> = async () => 'starting',
  stdin: Uint8Array | string = CONFIG,
  command = 'ADD',
) {
  const clock = fakeClock();
  const sent: { stateDir: string; body: RequestBody }[] = [];
  const waits: number[] = [];
  const starts: string[] = [];
  const printed: string[] = [];
  const errors: string[] = [];
  const replaced: string[] = [];
  const deps: ShimDeps = {
    clock,
    announcerPid: async () => 4242,
    replaceHung: async (stateDir) => (replaced.push(stateDir), 'not replaced: it made progress'),
    exchange: async (stateDir, body, waitMs) => {
      sent.push({ stateDir, body });
      waits.push(waitMs);
      return outcomes[Math.min(sent.length - 1, outcomes.length - 1)]!;
    },
    start: async (stateDir) => {
      starts.push(stateDir);
      return start();
    },
  };
  const bytes = typeof stdin === 'string' ? new TextEncoder().encode(stdin) : stdin;
  const io = {
    env: { ...ENV, CNI_COMMAND: command },
    readStdin: async (max: number) => bytes.subarray(0, max + 1),
    writeStdout: (t: string) => void printed.push(t),
    writeStderr: (t: string) => void errors.push(t),
  };
  return { clock, sent, waits, starts, printed, errors, replaced, result: () => runShim(io, deps) };
}

const END: Outcome = { exit: 0, stdout: '{"cniVersion":"1.0.0"}' };

describe('runShim', { timeout: 5000 }, () => {
  const forwardsCNIVariablesTitle =
    "forwards the CNI variables and stdin as they came to stateDir's announcer, prints its stdout, returns its exit";
  it(forwardsCNIVariablesTitle, async () => {
    const h = harness([{ exit: 7, stdout: 'result' }]);
    expect(await h.result()).toEqual({ exit: 7 });
    expect(h.sent).toEqual([
      { stateDir: '/state', body: { cni: { env: { CNI_COMMAND: 'ADD', CNI_NETNS: '/run/netns/x' }, stdin: CONFIG } } },
    ]);
    expect(h.printed).toEqual(['result']);
    expect(h.starts).toEqual([]);
  });

  it('starts an absent announcer once, then sends the request again', async () => {
    const h = harness([{ unreachable: 'ENOENT' }, END], async () => 'running');
    expect(await h.result()).toEqual({ exit: 0 });
    expect(h.starts).toEqual(['/state']);
    expect(h.sent).toHaveLength(2);
  });

  const waitsForReadyTitle =
    'the shim that spawned the announcer tries again only once it says it listens (its ready line), not every RETRY_MS';
  it(waitsForReadyTitle, async () => {
    let listening = (): void => undefined;
    const ready = new Promise<string>((resolve) => {
      listening = () => resolve('listening');
    });
    const h = harness([{ unreachable: 'ENOENT' }, END], async () => ({ ready }));
    const result = h.result();
    await until(() => h.clock.timers.length === 1);
    // The one timer is the call's end: ADD's own wait (longer than START_MS), and STOP_MS.
    expect(h.clock.timers.map((t) => t.ms)).toEqual([2000 + MARGIN_MS + STOP_MS]);
    expect(h.sent).toHaveLength(1);
    listening();
    expect(await result).toEqual({ exit: 0 });
    expect(h.sent).toHaveLength(2);
    expect(h.clock.timers).toEqual([]);
  });

  it.each([
    ['cannot be started', () => Promise.reject(new Error('EACCES: /state')), 'EACCES: /state'],
    [
      'cannot be executed',
      async () => ({ ready: Promise.reject<string>(new Error('spawn /opt/cni/bin/announcer ENOENT')) }),
      'spawn /opt/cni/bin/announcer ENOENT',
    ],
    [
      'says it cannot start',
      async () => ({ ready: Promise.resolve('failed: cannot open /s/announcer-daemon.flock: ELOOP') }),
      'cannot open /s/announcer-daemon.flock: ELOOP',
    ],
    ['exits before it listens', async () => ({ ready: Promise.resolve('') }), 'it exited before it listened'],
  ])('an announcer that %s: code 11 naming why, at once, with no second try', async (_what, start, why) => {
    const h = harness([{ unreachable: 'ENOENT' }], start as () => Promise<Started>);
    expect(await h.result()).toEqual({ exit: 1 });
    const got = JSON.parse(h.printed.join(''));
    expect(got).toMatchObject({ code: 11, msg: expect.stringContaining(`it could not be started: ${why}`) });
    expect(h.sent).toHaveLength(1);
    expect(h.clock.timers).toEqual([]);
  });

  it('an announcer that finds another serving (its ready line says so) sends the request there', async () => {
    const h = harness([{ unreachable: 'ENOENT' }, END], async () => ({ ready: Promise.resolve('served') }));
    expect(await h.result()).toEqual({ exit: 0 });
    expect(h.sent).toHaveLength(2);
  });

  it('a spawned announcer that never says it listens is tried once its wait has passed: code 11', async () => {
    const h = harness([{ unreachable: 'ENOENT' }], async () => ({ ready: new Promise<string>(() => undefined) }));
    const result = h.result();
    await until(() => h.clock.timers.length === 1);
    h.clock.set(1000 + 2000 + MARGIN_MS + STOP_MS);
    h.clock.timers.pop()!.fire();
    expect(await result).toEqual({ exit: 1 });
    expect(JSON.parse(h.printed.join(''))).toMatchObject({ code: 11, msg: expect.stringContaining('ENOENT') });
    expect(h.sent).toHaveLength(2);
  });

  it('starts the new build when the announcer hands over', async () => {
    const h = harness([{ refused: 'handover' }, END], async () => 'running');
    expect(await h.result()).toEqual({ exit: 0 });
    expect(h.starts).toEqual(['/state']);
  });

  const resetTitle =
    'a reset (the request never read) is sent again at once, for every command, and a full backlog ' +
    '(EAGAIN) after RETRY_MS; neither starts an announcer while one listens';
  it(resetTitle, async () => {
    for (const command of ['ADD', 'CHECK', 'DEL', 'GC', 'STATUS']) {
      const h = harness([{ reset: true }, END], undefined, CONFIG, command);
      expect(await h.result()).toEqual({ exit: 0 });
      expect(h.sent).toHaveLength(2);
      expect(h.starts).toEqual([]);
    }
    const busy = harness([{ unreachable: 'EAGAIN' }, END]);
    const result = busy.result();
    await until(() => busy.clock.timers.length === 1);
    fireOnly(busy.clock, RETRY_MS);
    expect(await result).toEqual({ exit: 0 });
    expect(busy.starts).toEqual([]);
  });

  it('a reset then no listener: starts the next announcer and sends there', async () => {
    const h = harness([{ reset: true }, { unreachable: 'ECONNREFUSED' }, END], async () => ({
      ready: Promise.resolve('listening'),
    }));
    expect(await h.result()).toEqual({ exit: 0 });
    expect(h.starts).toEqual(['/state']);
    expect(h.sent).toHaveLength(3);
  });

  it('an end before the answer (the command may have run): DEL and GC exit 0 saying so; never sent again', async () => {
    for (const command of ['DEL', 'GC']) {
      const h = harness([{ closed: true }, END], undefined, CONFIG, command);
      expect(await h.result()).toEqual({ exit: 0 });
      expect(h.errors.join('')).toContain(`${command} may not have run`);
      expect(h.sent).toHaveLength(1);
    }
  });

  const waitsAddWaitMsProbeMsTitle =
    'waits addWaitMs + probeMs (conflictCheck on) + MARGIN_MS for ADD and CHECK, BRIEF_MS for the others';
  it(waitsAddWaitMsProbeMsTitle, async () => {
    const probing = '{"cniVersion":"1.0.0","stateDir":"/s","addWaitMs":1000,"conflictCheck":"warn","probeMs":300}';
    for (const [stdin, command, ms] of [
      [CONFIG, 'ADD', 2000 + MARGIN_MS],
      [probing, 'ADD', 1300 + MARGIN_MS],
      [probing, 'CHECK', 1300 + MARGIN_MS],
      ['{"stateDir":"/s","addWaitMs":1000,"probeMs":300}', 'ADD', 1000 + MARGIN_MS],
      [probing, 'DEL', BRIEF_MS],
      [probing, 'GC', BRIEF_MS],
      [probing, 'STATUS', BRIEF_MS],
    ] as [string, string, number][]) {
      const h = harness([END], undefined, stdin, command);
      await h.result();
      expect(h.waits).toEqual([ms]);
    }
  });

  const retriesEveryRETRYTitle =
    'retries every RETRY_MS while the started announcer is not up yet, and gives up ' +
    'after its own wait (ADD: 5 s, more than START_MS): code 11';
  it(retriesEveryRETRYTitle, async () => {
    const h = harness([{ unreachable: 'ECONNREFUSED' }]);
    const result = h.result();
    for (let i = 0; i < 3; i++) {
      await until(() => h.clock.timers.length === 1);
      expect(h.clock.timers[0]!.ms).toBe(RETRY_MS);
      h.clock.timers.pop()!.fire();
    }
    h.clock.set(1000 + START_MS + STOP_MS);
    await until(() => h.clock.timers.length === 1);
    expect(h.printed).toEqual([]); // START_MS passed, but ADD's own wait (addWaitMs + 3 s) has not
    h.clock.timers.pop()!.fire();
    await until(() => h.clock.timers.length === 1);
    h.clock.set(1000 + 5000 + STOP_MS);
    h.clock.timers.pop()!.fire();
    expect(await result).toEqual({ exit: 1 });
    expect(JSON.parse(h.printed.join(''))).toMatchObject({ code: 11, msg: expect.stringContaining('ECONNREFUSED') });
    // Each try after a refused connection asks to start once more: another shim's start may have failed meanwhile.
    expect(h.starts).toHaveLength(5);
    expect(h.sent).toHaveLength(6);
  });

  it('fails ADD and CHECK with code 11 naming the pid and what was waited for, running nothing itself', async () => {
    for (const [outcome, reason] of [
      [{ hung: true }, 'no answer within 5000 ms on /state/announcer.sock; not replaced: it made progress'],
      // An end before the answer: the command may have run, and is never sent again.
      [
        { closed: true },
        'it closed the connection on /state/announcer.sock before answering: the command may have run',
      ],
      [{ refused: 'version' }, 'it refused the request on /state/announcer.sock (version)'],
      [{ unreachable: 'EACCES' }, 'connect to /state/announcer.sock failed (EACCES)'],
    ] as [Outcome, string][]) {
      for (const command of ['ADD', 'CHECK']) {
        const h = harness([outcome], undefined, CONFIG, command);
        expect(await h.result()).toEqual({ exit: 1 });
        expect(JSON.parse(h.printed.join(''))).toEqual({
          cniVersion: '1.0.0',
          code: 11,
          msg: `the announcer of stateDir /state (pid 4242) did not answer: ${reason}`,
        });
        expect([h.starts, h.sent.length]).toEqual([[], 1]); // never sent again
        // Only a request that got no answer by its deadline looks for a hung announcer to replace.
        expect(h.replaced).toEqual('hung' in outcome ? ['/state'] : []);
      }
    }
  });

  it('lets DEL and GC succeed, saying so on stderr; STATUS answers code 50', async () => {
    for (const command of ['DEL', 'GC']) {
      const h = harness([{ hung: true }], undefined, CONFIG, command);
      expect(await h.result()).toEqual({ exit: 0 });
      expect(h.printed).toEqual([]);
      expect(h.errors.join('')).toContain(`${command} left queued or not run`);
    }
    const h = harness([{ hung: true }], undefined, CONFIG, 'STATUS');
    expect(await h.result()).toEqual({ exit: 1 });
    expect(JSON.parse(h.printed.join(''))).toMatchObject({ code: 50 });
  });

  it('under onUnavailable skip: ADD prints prevResult unannounced with a WARN, STATUS succeeds', async () => {
    const prevResult = { cniVersion: '1.0.0', ips: [{ address: '10.0.0.2/24' }] };
    const config = JSON.stringify({ cniVersion: '1.0.0', stateDir: '/s', onUnavailable: 'skip', prevResult });
    const h = harness([{ hung: true }], undefined, config);
    expect(await h.result()).toEqual({ exit: 0 });
    expect(JSON.parse(h.printed.join(''))).toEqual(prevResult);
    expect(h.errors.join('')).toContain('WARN ADD not announced (onUnavailable: skip)');
    const status = harness([{ hung: true }], undefined, config, 'STATUS');
    expect(await status.result()).toEqual({ exit: 0 });
  });

  it('a stateDir that cannot be used: ADD code 105 and STATUS 50 say what to fix, DEL exits 0 saying so', async () => {
    const unsafe = async () => {
      throw new StateDirError('unsafe stateDir: /state is writable by group or others (mode 0770): chmod 0700 /state');
    };
    for (const [command, code] of [
      ['ADD', 105],
      ['STATUS', 50],
      ['GC', 105],
    ] as const) {
      const h = harness([{ unreachable: 'ENOENT' }], unsafe, CONFIG, command);
      expect(await h.result()).toEqual({ exit: 1 });
      expect(JSON.parse(h.printed.join(''))).toMatchObject({ code, msg: expect.stringMatching(/^unsafe stateDir/) });
    }
    const del = harness([{ unreachable: 'ENOENT' }], unsafe, CONFIG, 'DEL');
    expect(await del.result()).toEqual({ exit: 0 });
    expect(del.errors.join('')).toContain('DEL did nothing: unsafe stateDir');
    const long = harness([{ unreachable: 'ENAMETOOLONG' }]);
    expect(await long.result()).toEqual({ exit: 1 });
    const got = JSON.parse(long.printed.join(''));
    expect(got).toMatchObject({ code: 105, msg: 'cannot use stateDir /state: ENAMETOOLONG' });
    expect(long.starts).toEqual([]);
  });

  const refusesStdinOverTitle =
    'refuses a stdin over MAX_FORWARDED_STDIN naming the size (DEL: exit 0, said on stderr), sending nothing';
  it(refusesStdinOverTitle, async () => {
    const big = new Uint8Array(MAX_FORWARDED_STDIN + 10).fill(0x20);
    const h = harness([END], undefined, big);
    expect(await h.result()).toEqual({ exit: 1 });
    const seen = JSON.parse(h.printed.join(''));
    expect(seen).toMatchObject({ code: 5, msg: expect.stringContaining(`${MAX_FORWARDED_STDIN} bytes`) });
    const del = harness([END], undefined, big, 'DEL');
    expect(await del.result()).toEqual({ exit: 0 });
    expect(del.errors.join('')).toContain('DEL not run');
    expect([...h.sent, ...del.sent]).toEqual([]);
  });

  const handsBackSendingTitle =
    'hands back, sending nothing, a stdin that is not UTF-8 or has no usable stateDir (dispatch says why)';
  it(handsBackSendingTitle, async () => {
    for (const stdin of [new Uint8Array([0x7b, 0xff, 0x7d]), '{"stateDir":"relative"}']) {
      const h = harness([END], undefined, stdin);
      expect(await h.result()).toHaveProperty('invalid');
      expect(h.sent).toEqual([]);
    }
  });

  it('forwards a config behind a byte order mark without the mark, as dispatch reads it', async () => {
    const h = harness([END], undefined, `\uFEFF${CONFIG}`);
    expect(await h.result()).toEqual({ exit: 0 });
    expect(h.sent.map((s) => s.body)).toEqual([{ cni: { env: expect.any(Object), stdin: CONFIG } }]);
  });
});

describe('stateDirOf', () => {
  it("takes the config's absolute stateDir, the default when absent, and nothing odd", () => {
    const of = (text: string) => {
      const config = parseObject(text);
      return config && stateDirOf(config);
    };
    expect(of('{"stateDir":"/var/run/x"}')).toBe('/var/run/x');
    expect(of('{"name":"n"}')).toBe(DEFAULT_STATE_DIR);
    for (const odd of ['{"stateDir":"x"}', '{"stateDir":"/a\\u0000b"}', '{"stateDir":7}', '[]', 'null', '{', '"s"'])
      expect(of(odd)).toBeUndefined();
  });
});

describe('nextStep', () => {
  const stepsTitle =
    'starts for no listener or a hand-over, sends again after a reset or a full backlog, else takes the outcome';
  it(stepsTitle, () => {
    const start = [{ unreachable: 'ENOENT' }, { unreachable: 'ECONNREFUSED' }, { refused: 'handover' }];
    const again = [{ reset: true }, { unreachable: 'EAGAIN' }];
    const take: object[] = [{ unreachable: 'EACCES' }, { refused: 'version' }, { hung: true }, { closed: true }, END];
    take.push({ control: 1 });
    for (const [step, outcomes] of Object.entries({ start, again, take }))
      for (const o of outcomes) expect([step, nextStep(o as Outcome)]).toEqual([step, step]);
  });
});

describe('waitMsOf', () => {
  it("uses addWaitMs's, probeMs's and gatewayCheckMs's defaults and largest values as the options declare them", () => {
    const got = [OPTIONS.addWaitMs.fallback, OPTIONS.probeMs.fallback, OPTIONS.gatewayCheckMs.fallback];
    expect(got).toEqual([DEFAULT_ADD_WAIT_MS, DEFAULT_PROBE_MS, DEFAULT_GATEWAY_CHECK_MS]);
    for (const [option, max] of [
      [OPTIONS.probeMs, MAX_PROBE_MS],
      [OPTIONS.gatewayCheckMs, MAX_GATEWAY_CHECK_MS],
    ] as const) {
      expect(option.schema.safeParse(max).success).toBe(true);
      expect(option.schema.safeParse(max + 1).success).toBe(false);
    }
    const expected = DEFAULT_ADD_WAIT_MS + MAX_PROBE_MS + MARGIN_MS;
    expect(waitMsOf('ADD', { conflictCheck: 'fail', podOverrides: ['probeMs'] })).toBe(expected);
  });

  it.each([
    ['report, by default: nothing', {}, 0],
    ['report, gatewayCheckMs set', { gatewayCheck: 'report', gatewayCheckMs: 5000 }, 0],
    ['off', { gatewayCheck: 'off', gatewayCheckMs: 5000 }, 0],
    ['a pod may set only gatewayCheckMs: it cannot ask for require', { podOverrides: ['gatewayCheckMs'] }, 0],
    ['require: its default', { gatewayCheck: 'require' }, DEFAULT_GATEWAY_CHECK_MS],
    ['require: its gatewayCheckMs', { gatewayCheck: 'require', gatewayCheckMs: 300 }, 300],
    [
      'a pod may ask for require: the conflist gatewayCheckMs',
      { podOverrides: ['gatewayCheck'] },
      DEFAULT_GATEWAY_CHECK_MS,
    ],
    [
      'a pod may ask for require, with its gatewayCheckMs: the largest',
      { gatewayCheckMs: 300, podOverrides: ['gatewayCheck', 'gatewayCheckMs'] },
      MAX_GATEWAY_CHECK_MS,
    ],
    [
      'require, a pod may set gatewayCheckMs: the largest',
      { gatewayCheck: 'require', gatewayCheckMs: 300, podOverrides: ['gatewayCheckMs'] },
      MAX_GATEWAY_CHECK_MS,
    ],
  ])('an ADD and a CHECK add what gatewayCheck may wait: %s', (_what, config, added) => {
    for (const command of ['ADD', 'CHECK'])
      expect(waitMsOf(command, { addWaitMs: 500, ...config })).toBe(500 + added + MARGIN_MS);
    expect(waitMsOf('DEL', { gatewayCheck: 'require' })).toBe(BRIEF_MS);
  });

  it('adds the conflict probe and the gateway check together', () => {
    const config = { conflictCheck: 'warn', probeMs: 200, gatewayCheck: 'require', gatewayCheckMs: 700 };
    expect(waitMsOf('ADD', config)).toBe(DEFAULT_ADD_WAIT_MS + 200 + 700 + MARGIN_MS);
  });
});

let announcer: FakeAnnouncer | undefined;
afterEach(async () => {
  await announcer?.stop();
  announcer = undefined;
});

/** What each exchange waits for its end. */
const WAIT = 4000;

const BODY = { cni: { env: { CNI_COMMAND: 'ADD' }, stdin: '{"cniVersion":"1.0.0"}\n' } };

/** Runs one exchange against a fake announcer answering with `answer`. */
async function run(
  answer: (t: Taken) => void,
  clock = fakeClock(),
): Promise<{ outcome: Promise<Outcome>; clock: ReturnType<typeof fakeClock>; fake: FakeAnnouncer }> {
  announcer = await fakeAnnouncer(answer);
  const outcome = exchange(connectUnix, clock, announcer.path, BODY, 'build-1', WAIT);
  return { outcome, clock, fake: announcer };
}

// A mutant that never settles fails at the timeout, not after vitest's minute.
describe('exchange', { timeout: 5000 }, () => {
  let dir: string;
  useTempDir('shim-', (d) => (dir = d));

  it('sends one request line: version, build, deadline = now + the wait, and the body', async () => {
    const clock = fakeClock(5000);
    const { outcome, fake } = await run((t) => t.socket.write(encodeLine({ exit: 0, stdout: 'ok' })), clock);
    await outcome;
    const got = fake.taken.map((t) => t.request);
    expect(got).toEqual([{ v: WIRE_VERSION, build: 'build-1', deadline: 5000 + WAIT, ...BODY }]);
  });

  it.each([
    [
      "ends with the command's stdout and exit status",
      encodeLine({ exit: 3, stdout: 'out\n' }),
      { exit: 3, stdout: 'out\n' },
    ],
    [
      "answers a control request with the announcer's value",
      encodeLine({ control: { jobs: 2 } }),
      { control: { jobs: 2 } },
    ],
    ['reports a refusal with its reason', encodeLine({ refused: 'handover' }), { refused: 'handover' }],
    ['is closed on EOF before any answer, once the announcer read the request', undefined, { closed: true }],
    ['is closed on a line that is not the protocol', 'garbage\n', { closed: true }],
  ])('%s, and closes the connection', async (_what, line, expected) => {
    const { outcome, fake } = await run((t) => (line === undefined ? t.socket.end() : t.socket.write(line)));
    expect(await outcome).toEqual(expected);
    await until(() => fake.taken[0]!.closed);
  });

  it('takes a reply split anywhere, even inside a UTF-8 character', async () => {
    const bytes = Buffer.from(encodeLine({ exit: 0, stdout: 'é€' }));
    // A transport that hands the reply over one byte at a time (a socket may coalesce them).
    const connect: ConnectUnix = async (_path, handlers) => ({
      write: () => queueMicrotask(() => bytes.forEach((_b, i) => handlers.data(bytes.subarray(i, i + 1)))),
      close: () => undefined,
    });
    expect(await exchange(connect, fakeClock(), '/x', BODY, 'b', WAIT)).toEqual({ exit: 0, stdout: 'é€' });
  });

  it('is hung when no end comes by the deadline, closes, and ignores a later line', async () => {
    let taken: Taken | undefined;
    const { outcome, clock } = await run((t) => {
      taken = t;
    });
    await until(() => taken !== undefined);
    fireOnly(clock, WAIT);
    expect(await outcome).toEqual({ hung: true });
    await until(() => taken!.closed);
  });

  it('is reset, at once, when the connection is reset (ECONNRESET, EPIPE) before any answer', async () => {
    for (const code of ['ECONNRESET', 'EPIPE', 'EIO']) {
      const connect: ConnectUnix = async (_path, handlers) => ({
        write: () => queueMicrotask(() => handlers.error(new StreamError(`unix socket /x: ${code}`, code))),
        close: () => undefined,
      });
      const clock = fakeClock();
      const got = await exchange(connect, clock, '/x', BODY, 'b', WAIT);
      expect(got).toEqual(code === 'EIO' ? { closed: true } : { reset: true });
      expect(clock.timers).toEqual([]);
    }
  });

  const backlogResetTitle =
    'is reset by a real announcer that closes its listening socket with the request unread in its backlog';
  it(backlogResetTitle, async () => {
    const path = join(dir, 'announcer.sock');
    // A listener that never accepts (node:net accepts at once): a Python one in a child process.
    const child = spawn('python3', [
      '-c',
      'import socket,sys,time\ns=socket.socket(socket.AF_UNIX);s.bind(sys.argv[1]);s.listen(4)\n' +
        'print("up",flush=True);sys.stdin.readline();s.close();time.sleep(5)',
      path,
    ]);
    try {
      await new Promise((resolve) => child.stdout.once('data', resolve));
      const outcome = exchange(connectUnix, fakeClock(), path, BODY, 'b', WAIT);
      await new Promise((resolve) => setTimeout(resolve, 100)); // connected, the request written, in the backlog
      child.stdin.write('\n');
      expect(await outcome).toEqual({ reset: true });
    } finally {
      child.kill('SIGKILL'); // the child this test started
    }
  });

  it('is unreachable, with the errno name, when connect fails', async () => {
    const clock = fakeClock();
    const got = await exchange(connectUnix, clock, '/nonexistent/announcer.sock', BODY, 'b', WAIT);
    expect(got).toEqual({ unreachable: 'ENOENT' });
    expect(clock.timers).toEqual([]);
  });

  it('is unreachable with ECONNREFUSED when nothing listens on the path', async () => {
    writeFileSync(join(dir, 'announcer.sock'), '');
    const seen = await exchange(connectUnix, fakeClock(), join(dir, 'announcer.sock'), BODY, 'b', WAIT);
    expect(seen).toEqual({ unreachable: 'ECONNREFUSED' });
  });
});

function deps(outcome: Outcome) {
  const sent: { stateDir: string; body: RequestBody; waitMs: number }[] = [];
  const exchange = async (stateDir: string, body: RequestBody, waitMs: number): Promise<Outcome> => {
    sent.push({ stateDir, body, waitMs });
    return outcome;
  };
  return { d: exchange, sent };
}

describe('askAnnouncer', { timeout: 5000 }, () => {
  it("sends { control }, waits CONTROL_WAIT_MS, and resolves with the announcer's reply", async () => {
    const { d, sent } = deps({ control: { ok: true, status: { pid: 7 } } });
    expect(await askAnnouncer('/s', { op: 'status' }, d)).toEqual({ ok: true, status: { pid: 7 } });
    expect(sent).toEqual([{ stateDir: '/s', body: { control: { op: 'status' } }, waitMs: CONTROL_WAIT_MS }]);
  });

  it('resolves undefined, once, for an absent, hung, closed, reset or refusing announcer, or no reply', async () => {
    const outcomes: Outcome[] = [
      { control: { jobs: 1 } },
      { control: null },
      { unreachable: 'ENOENT' },
      { hung: true },
      { closed: true },
      { reset: true },
      { refused: 'handover' },
    ];
    for (const o of outcomes) {
      const { d, sent } = deps(o);
      expect(await askAnnouncer('/s', { op: 'status' }, d)).toBeUndefined();
      expect(sent).toHaveLength(1);
    }
  });
});

describe('realShimDeps', { timeout: 5000 }, () => {
  let dir: string;
  useTempDir('shim-long-', (d) => (dir = d));
  const fdTarget = (path: string): string | undefined => {
    try {
      return readlinkSync(path);
    } catch {
      return undefined;
    }
  };

  const longTitle =
    'exchanges with the announcer of a stateDir too long for sockaddr_un through an fd of it, closed once answered; ' +
    'a failed open is unreachable';
  it(longTitle, async () => {
    const stateDir = join(dir, 'd'.repeat(60), 'e'.repeat(60));
    mkdirSync(stateDir, { recursive: true });
    // The fake listens through an fd of its own: Node refuses the long path too.
    const fd = openSync(stateDir, 'r');
    const held: string[] = [];
    try {
      announcer = await fakeAnnouncer(
        (t) => {
          // The shim's own fd of stateDir (the fake's is closed by now), open while it waits.
          held.push(...readdirSync('/proc/self/fd').filter((n) => fdTarget(`/proc/self/fd/${n}`) === stateDir));
          t.socket.end(encodeLine({ exit: 0, stdout: 'far' }));
        },
        { dir: `/proc/self/fd/${fd}` },
      );
    } finally {
      closeSync(fd);
    }
    const deps = await realShimDeps();
    expect(await deps.exchange(stateDir, { control: { op: 'status' } }, 1000)).toEqual({ exit: 0, stdout: 'far' });
    expect(held).toHaveLength(1);
    expect(fdTarget(`/proc/self/fd/${held[0]}`)).not.toBe(stateDir);
    expect(readdirSync(stateDir)).toEqual(['announcer.sock']);
    const got = await deps.exchange(`${stateDir}-missing`, { control: { op: 'status' } }, 1000);
    expect(got).toEqual({ unreachable: 'ENOENT' });
  });
});

describe('the unix-stream twins', () => {
  it("Bun's refuses with a StreamError outside Bun", async () => {
    const err = await bunConnect('/x', { data: () => undefined, end: () => undefined, error: () => undefined }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StreamError);
  });
});

describe('bootClock', () => {
  it('is /proc/uptime in ms, read once, carried on by the elapsed time', () => {
    let reads = 0;
    let elapsed = 40;
    const clock = bootClock(
      () => {
        reads++;
        return '7562.26 4259.49\n';
      },
      () => elapsed,
    );
    expect(clock.now()).toBe(7_562_260);
    elapsed = 340;
    expect(clock.now()).toBe(7_562_560);
    expect(reads).toBe(1);
  });
});
