// `announcer daemon` (src/daemon/daemon-verb.ts): its arguments (how the process runs, nothing more: the node settings
// are the stateDir's announcer.conf alone), the settings read once, and how a start that fails is said: exit status,
// stderr, and the ready fd's one line.
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DAEMON_USAGE, daemonVerb, loadNodeSettings, parseDaemonArgs } from '../../../src/daemon/daemon-verb';

describe('parseDaemonArgs', () => {
  it('takes the stateDir alone, the fd of its ready line as a shim starts it, and the DaemonSet flags', () => {
    // Strict: a flag not given is no key at all.
    expect(parseDaemonArgs(['/run/cni-announcer'])).toStrictEqual({
      ok: true,
      args: { stateDir: '/run/cni-announcer', resident: false },
    });
    const args = (argv: string[]) =>
      (({ ok, args }) => ok && args)(parseDaemonArgs(argv) as { ok: true; args: object });
    expect(args(['/run/a', '--ready-fd=3'])).toEqual({ stateDir: '/run/a', resident: false, readyFd: 3 });
    const daemonSet = { stateDir: '/run/a', resident: true, logFormat: 'json', listen: '127.0.0.1:9464' };
    expect(args(['/run/a', '--resident', '--log-format=json', '--listen', '127.0.0.1:9464'])).toEqual(daemonSet);
    expect(parseDaemonArgs(['/run/a', '--log-format=logfmt', '--listen=[::1]:80']).ok).toBe(true);
    expect(parseDaemonArgs(['/run/a', '--listen=:9464'])).toMatchObject({ ok: true, args: { listen: ':9464' } });
  });

  it('names every flag in its usage line, and no node setting', () => {
    expect(DAEMON_USAGE).toBe(
      'usage: announcer daemon <stateDir> [--resident] [--log-format=json|logfmt] [--listen=HOST:PORT] [--ready-fd=N]',
    );
  });

  it.each([
    [[], /stateDir must be an absolute path \(got ""\)/],
    [['run/a'], /absolute path \(got "run\/a"\)/],
    [['/run/a', 'extra'], /unknown argument "extra"/],
    [['/run/a', '--listen-x'], /unknown argument "--listen-x"/],
    [['/run/a', '--log-format=xml'], /--log-format must be json or logfmt \(got "xml"\)/],
    [['/run/a', '--listen=9464'], /--listen must be HOST:PORT \(got "9464"\)/],
    [['/run/a', '--resident=yes'], /--resident takes no value/],
    [['/run/a', '--ready-fd=2'], /--ready-fd must be 3 or more \(got 2\)/],
    [['/run/a', '--ready-fd=x'], /--ready-fd must be a whole number/],
  ])('refuses %j, naming the argument', (argv, problem) => {
    const parsed = parseDaemonArgs(argv);
    expect(parsed.ok ? undefined : parsed.problem).toMatch(problem);
  });
});

describe('daemonVerb', () => {
  /** Runs the verb with `argv` on a process that has no libc (none is needed before the settings are read). */
  async function verb(argv: string[]): Promise<{ status: number; err: string[] }> {
    const err: string[] = [];
    const libc = () => expect.fail('no libc before the settings are read');
    const timers = { now: () => 0, bootMs: () => 0, sleep: async () => undefined };
    return { status: await daemonVerb(argv, (line) => void err.push(line), libc, timers), err };
  }

  it.each(['--idle-exit-ms=5000', '--metrics-file=/m.prom', '--rate-limit=1/1', '--log-level=debug'])(
    'refuses the node-setting flag %s as an unknown argument (exit 2): the settings are announcer.conf alone',
    async (flag) => {
      const { status, err } = await verb(['/run/a', flag]);
      expect(status).toBe(2);
      expect(err).toEqual([
        expect.stringMatching(new RegExp(`^announcer daemon: unknown argument "${flag}"; usage: `)),
      ]);
    },
  );

  const failsTitle =
    "a start that fails says why on stderr and as the ready fd's one line (then closed): a bad --listen (exit 2), " +
    'a bad announcer.conf (exit 2, naming the file and its field)';
  it(failsTitle, async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'daemon-verb-'));
    try {
      const ready = join(stateDir, 'ready');
      const readyFd = () => String(openSync(ready, 'w'));
      const listen = await verb([stateDir, '--listen=999.0.0.1:80', `--ready-fd=${readyFd()}`]);
      expect(listen).toEqual({ status: 2, err: [expect.stringMatching(/^announcer daemon: --listen: /)] });
      expect(readFileSync(ready, 'utf8')).toBe(`failed: ${listen.err[0]!.slice('announcer daemon: '.length)}\n`);
      writeFileSync(join(stateDir, 'announcer.conf'), '{"idleExitMs":"soon"}');
      const conf = await verb([stateDir, `--ready-fd=${readyFd()}`]);
      expect(conf.status).toBe(2);
      expect(conf.err[0]).toMatch(new RegExp(`^announcer daemon: ${stateDir}/announcer.conf: .*idleExitMs`));
      expect(readFileSync(ready, 'utf8')).toMatch(/^failed: .*announcer\.conf: .*idleExitMs.*\n$/);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});

describe('loadNodeSettings', () => {
  it("reads the stateDir's announcer.conf over the defaults, once; absent: the defaults", () => {
    const asked: [string, number][] = [];
    const read = (text: string | undefined) => (path: string, max: number) => (asked.push([path, max]), text);
    const given = loadNodeSettings('/run/a', read('{"idleExitMs":5000,"metricsFile":"/m.prom"}'));
    expect(given).toEqual({ ok: true, settings: { idleExitMs: 5000, metricsFile: '/m.prom', logLevel: 'info' } });
    expect(loadNodeSettings('/run/a', read(undefined))).toEqual({
      ok: true,
      settings: { idleExitMs: 30_000, logLevel: 'info' },
    });
    expect(asked).toEqual(Array(2).fill(['/run/a/announcer.conf', 4096]));
  });

  it('says why the announcer must not start: a file it cannot read, a field that is not a node setting', () => {
    const unreadable = () => {
      throw new Error('EACCES');
    };
    expect(loadNodeSettings('/run/a', unreadable)).toEqual({
      ok: false,
      problem: 'cannot read /run/a/announcer.conf: EACCES',
    });
    const problem = /^\/run\/a\/announcer\.conf: "probeMs" is not a node setting/;
    expect(loadNodeSettings('/run/a', () => '{"probeMs":5}')).toEqual({
      ok: false,
      problem: expect.stringMatching(problem),
    });
  });
});
