// `announcer daemon` (src/daemon/daemon-verb.ts): its arguments (how the process runs, nothing more: the node settings
// are the stateDir's announcer.conf alone), the settings read once, and how a start that fails is said: exit status,
// stderr, and the ready fd's one line; and its loggers: each job's lines go to its network's logFile, the announcer's
// own to the node's log (never a network's), and with `--log-format` also to stdout, structured, at info and above,
// each naming its pod (container, ifname, K8S_POD_NAMESPACE/NAME from the job or the command's CNI_ARGS, IPs), so that
// grepping `kubectl logs` for a pod answers what was sent for it.
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DAEMON_USAGE,
  daemonLoggers,
  daemonVerb,
  loadNodeSettings,
  parseDaemonArgs,
} from '../../../src/daemon/daemon-verb';
import { jobIn, makeStateDir, type StateDir } from '../../support/daemon-fakes';
import { logRecords, type LogRecord } from '../../support/log-records';
import { useTempDir } from '../../support/temp-dir';

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
  let stateDir: string;
  useTempDir('daemon-verb-', (d) => (stateDir = d));

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
  });
});

describe('loadNodeSettings', () => {
  it("reads the stateDir's announcer.conf over the defaults, once; absent: the defaults", () => {
    const asked: [string, number][] = [];
    const read = (text: string | undefined) => (path: string, max: number) => (asked.push([path, max]), text);
    const given = loadNodeSettings('/run/a', read('{"idleExitMs":5000,"metricsFile":"/m.prom"}'));
    expect(given).toEqual({ ok: true, settings: { idleExitMs: 5000, metricsFile: '/m.prom', logLevel: 'info' } });
    const got = loadNodeSettings('/run/a', read(undefined));
    expect(got).toEqual({ ok: true, settings: { idleExitMs: 30_000, logLevel: 'info' } });
    expect(asked).toEqual(Array(2).fill(['/run/a/announcer.conf', 4096]));
  });

  it('says why the announcer must not start: a file it cannot read, a field that is not a node setting', () => {
    const unreadable = () => {
      throw new Error('EACCES');
    };
    const seen = loadNodeSettings('/run/a', unreadable);
    expect(seen).toEqual({ ok: false, problem: 'cannot read /run/a/announcer.conf: EACCES' });
    const problem = /^\/run\/a\/announcer\.conf: "probeMs" is not a node setting/;
    const found = loadNodeSettings('/run/a', () => '{"probeMs":5}');
    expect(found).toEqual({ ok: false, problem: expect.stringMatching(problem) });
  });
});

const T = '2026-12-01T23:10:00.000Z';
let state: StateDir;
beforeEach(() => {
  state = makeStateDir();
});
afterEach(() => state.remove());

/** The records of a log file, without their levels' case. */
const recordsIn = (file: string): LogRecord[] => logRecords(readFileSync(file, 'utf8'));

function withStdout(format: 'json' | 'logfmt' = 'json', own: { logFile?: string } = {}) {
  const lines: string[] = [];
  const stdout = { format, sink: (l: string) => void lines.push(l), now: () => new Date(T) };
  const loggers = daemonLoggers({ daemon: 42 }, { logLevel: 'info', ...own }, stdout);
  return { ...loggers, lines, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('daemonLoggers with --log-format', () => {
  it("a job's lines name its pod, IPs and round on stdout, and still go to its logFile", () => {
    const logFile = join(state.dir, 'announcer.log');
    const job = jobIn(state, {
      pod: { namespace: 'team-a', name: 'web-0' },
      logFile,
      interfaces: [{ name: 'eth0', ipv4: ['10.88.0.5'], ipv6: ['fd00::5'] }],
    });
    const out = withStdout();
    out.jobLog(job).info('announced', { round: 2, of: 3, frames: 2 });
    expect(out.parsed()).toEqual([
      {
        time: T,
        level: 'info',
        msg: 'announced',
        daemon: 42,
        network: 'net',
        containerId: 'c1',
        ifname: 'eth0',
        K8S_POD_NAMESPACE: 'team-a',
        K8S_POD_NAME: 'web-0',
        ips: ['10.88.0.5', 'fd00::5'],
        round: 2,
        of: 3,
        frames: 2,
      },
    ]);
    expect(recordsIn(logFile)).toEqual([
      {
        level: 'info',
        msg: 'announced',
        fields: { daemon: 42, containerId: 'c1', ifname: 'eth0', round: 2, of: 3, frames: 2 },
      },
    ]);
  });

  const leavesDebugLinesTitle =
    'leaves debug lines off stdout (the logFile keeps its own level); the ' +
    "announcer's own lines go to the node's log, not a job's";
  it(leavesDebugLinesTitle, () => {
    const logFile = join(state.dir, 'announcer.log');
    const nodeLog = join(state.dir, 'node.log');
    const out = withStdout('json', { logFile: nodeLog });
    out.jobLog(jobIn(state, { logFile, logLevel: 'debug' })).debug('background work scheduled');
    out.log.info('announcer started', { pid: 42 });
    expect(out.parsed()).toEqual([{ time: T, level: 'info', msg: 'announcer started', daemon: 42, pid: 42 }]);
    expect(recordsIn(logFile).map((r) => [r.level, r.msg])).toEqual([['debug', 'background work scheduled']]);
    expect(recordsIn(nodeLog)).toEqual([{ level: 'info', msg: 'announcer started', fields: { daemon: 42, pid: 42 } }]);
  });

  it("a command's lines name the pod from its CNI_ARGS", () => {
    const out = withStdout('logfmt');
    const args = { raw: { IgnoreUnknown: '1', K8S_POD_NAMESPACE: 'team a', K8S_POD_NAME: 'web-0' } };
    out
      .commandLog({ logLevel: 'info' }, { containerId: 'c9', ifname: 'net1', args })
      .info('announced', { round: 1, ips: ['10.88.0.9'] });
    expect(out.lines).toEqual([
      `time=${T} level=info msg=announced daemon=42 containerId=c9 ifname=net1 K8S_POD_NAMESPACE="team ` +
        `a" K8S_POD_NAME=web-0 round=1 ips="[\\"10.88.0.9\\"]"\n`,
    ]);
  });

  it('without --log-format nothing goes to stdout: the loggers are the files alone', () => {
    const logFile = join(state.dir, 'announcer.log');
    const nodeLog = join(state.dir, 'node.log');
    const { jobLog, log } = daemonLoggers({ daemon: 42 }, { logFile: nodeLog, logLevel: 'warn' });
    jobLog(jobIn(state, { logFile })).info('announced');
    log.info('announcer started');
    log.warn('node options ignored');
    expect(recordsIn(logFile).map((r) => r.msg)).toEqual(['announced']);
    expect(recordsIn(nodeLog).map((r) => [r.level, r.msg])).toEqual([['warn', 'node options ignored']]);
  });
});
