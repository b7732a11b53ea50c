// The logger (levels, fields, the file sink) and its line formats: `text`, the plugin's own, and the structured ones
// of `announcer daemon --log-format`, where every line parses alone (JSON.parse, or a logfmt reader written here from
// the format's rules), whatever a field holds.
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it, expect } from 'vitest';
import { createLogger, fileSink, formatLine, type LogEvent, type LogFormat, type LogLevel } from '../../src/log';
import { SysError } from '../../src/sys/sys-error';
import { useTempDir } from '../support/temp-dir';

const T = '2024-05-06T07:08:09.010Z';
const clock = (): Date => new Date(T);

/** A logger at `level` (in `format`) whose lines land in the returned array. */
function capture(level: LogLevel, base?: Record<string, unknown>, format?: LogFormat) {
  const lines: string[] = [];
  const log = createLogger((line) => lines.push(line), level, base, clock, format);
  return { log, lines };
}

describe('createLogger: levels', () => {
  it.each([
    ['debug', ['ERROR ADD failed', 'WARN pod not ready in time', 'INFO announced', 'DEBUG round sent']],
    ['info', ['ERROR ADD failed', 'WARN pod not ready in time', 'INFO announced']],
    ['warn', ['ERROR ADD failed', 'WARN pod not ready in time']],
    ['error', ['ERROR ADD failed']],
  ] as const)('writes `time LEVEL msg` lines at %s and above, and drops the rest', (level, kept) => {
    const { log, lines } = capture(level);
    log.error('ADD failed');
    log.warn('pod not ready in time');
    log.info('announced');
    log.debug('round sent');
    expect(lines).toEqual(kept.map((line) => `${T} ${line}\n`));
  });
});

describe('createLogger: fields', () => {
  it('appends fields as k=v in order, leaving out undefined ones', () => {
    const { log, lines } = capture('info');
    log.info('announced', { round: 1, of: 3, deferred: false, skipped: undefined, last: null });
    expect(lines).toEqual([`${T} INFO announced round=1 of=3 deferred=false last=null\n`]);
  });

  it('puts with() fields before call fields, and lets call fields override them', () => {
    const { log, lines } = capture('info');
    const attachment = log.with({ containerId: 'c0ffee', ifname: 'eth0' });
    attachment.info('announced', { frames: 2 });
    attachment.info('moved', { ifname: 'net1' });
    expect(lines).toEqual([
      `${T} INFO announced containerId=c0ffee ifname=eth0 frames=2\n`,
      `${T} INFO moved containerId=c0ffee ifname=net1\n`,
    ]);
  });

  it('chains with() and keeps the parent logger unchanged', () => {
    const { log, lines } = capture('info', { network: 'podnet' });
    const child = log.with({ containerId: 'c0ffee' }).with({ ifname: 'eth0' });
    child.info('a');
    log.info('b');
    expect(lines).toEqual([
      `${T} INFO a network=podnet containerId=c0ffee ifname=eth0\n`,
      `${T} INFO b network=podnet\n`,
    ]);
  });

  it('keeps the level in with() loggers', () => {
    const { log, lines } = capture('warn');
    log.with({ ifname: 'eth0' }).info('dropped');
    expect(lines).toEqual([]);
  });

  it('quotes values with spaces, quotes or "="', () => {
    const { log, lines } = capture('info');
    log.info('not announcing address', {
      reason: 'not ready',
      note: 'say "hi"',
      args: 'K=V',
      path: '/var/run/netns/pod',
    });
    expect(lines).toEqual([
      `${T} INFO not announcing address reason="not ready" note="say \\"hi\\"" args="K=V" path=/var/run/netns/pod\n`,
    ]);
  });

  it('renders arrays and objects as JSON, quoted', () => {
    const { log, lines } = capture('info');
    log.info('waiting', { interfaces: ['eth0', 'net1'] });
    expect(lines).toEqual([`${T} INFO waiting interfaces="[\\"eth0\\",\\"net1\\"]"\n`]);
  });

  it('renders Error values by their message', () => {
    const { log, lines } = capture('info');
    log.error('ADD failed', { error: new SysError('setns(/var/run/netns/pod)', 2) });
    log.error('ADD failed', { error: new Error('boom') });
    expect(lines).toEqual([
      `${T} ERROR ADD failed error="setns(/var/run/netns/pod): ENOENT"\n`,
      `${T} ERROR ADD failed error=boom\n`,
    ]);
  });
});

describe('fileSink', () => {
  let dir: string;
  useTempDir('announcer-log-', (d) => (dir = d));

  it('appends lines to a 0600 file', () => {
    const file = join(dir, 'announcer.log');
    const sink = fileSink(file);
    sink('one\n');
    sink('two\n');
    expect(readFileSync(file, 'utf8')).toBe('one\ntwo\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('drops lines for a FIFO without a reader at once, never waiting for one', () => {
    const fifo = join(dir, 'announcer.log');
    execFileSync('mkfifo', [fifo]);
    expect(() => fileSink(fifo)('lost\n')).not.toThrow();
    expect(statSync(fifo).isFIFO()).toBe(true);
  });

  it('drops a line it cannot write instead of throwing', () => {
    expect(() => fileSink(join(dir, 'missing', 'announcer.log'))('lost\n')).not.toThrow();
  });
});

describe('values JSON cannot encode', () => {
  it('logs BigInt and circular values instead of throwing', () => {
    const { log, lines } = capture('debug');
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    log.warn('odd values', { big: 10n, circular });
    expect(lines).toEqual([`${T} WARN odd values big=10 circular="[object Object]"\n`]);
  });
});

const event = (fields: Record<string, unknown>, msg = 'announced'): LogEvent => ({
  time: new Date(T),
  level: 'info',
  msg,
  fields,
});

/** A logfmt line's pairs: bare values up to a space, quoted ones with JSON's escapes. */
function readLogfmt(line: string): Record<string, string> {
  expect(line.endsWith('\n')).toBe(true);
  const out: Record<string, string> = {};
  const pair = /([A-Za-z0-9_.-]+)=("(?:[^"\\]|\\.)*"|[^\s"=\\]+)(?: |\n$)/gy;
  let consumed = 0;
  for (let m = pair.exec(line); m; m = pair.exec(line)) {
    out[m[1]!] = m[2]!.startsWith('"') ? JSON.parse(m[2]!) : m[2]!;
    consumed = pair.lastIndex;
  }
  expect(consumed, `unread: ${JSON.stringify(line.slice(consumed))}`).toBe(line.length);
  return out;
}

const NASTY = {
  msgText: 'say "hi" = \\ ok',
  spaced: 'a b',
  newline: 'x\ny',
  tab: 't\tu',
  empty: '',
  eq: 'k=v',
  bell: '\u0007',
};

describe('--log-format=json', () => {
  it('is one JSON object per line: time, level, msg first, then the fields as they are', () => {
    const line = formatLine(
      'json',
      event({ containerId: 'c1', round: 2, ips: ['10.88.0.5', 'fd00::5'], skipped: undefined }),
    );
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    expect(Object.keys(JSON.parse(line))).toEqual(['time', 'level', 'msg', 'containerId', 'round', 'ips']);
    expect(JSON.parse(line)).toEqual({
      time: T,
      level: 'info',
      msg: 'announced',
      containerId: 'c1',
      round: 2,
      ips: ['10.88.0.5', 'fd00::5'],
    });
  });

  const escapesQuotesBackslashesTitle =
    'escapes quotes, backslashes, newlines and control characters; an error is its ' +
    'message; a BigInt or a circular field never throws';
  it(escapesQuotesBackslashesTitle, () => {
    const circular: Record<string, unknown> = { a: 1 };
    circular.self = circular;
    const fields = { ...NASTY, error: new SysError('setns(/var/run/netns/p)', 9), big: 10n, circular };
    const line = formatLine('json', event(fields, 'msg with "quotes"\nand a newline'));
    expect(line.slice(0, -1)).not.toContain('\n');
    const parsed = JSON.parse(line);
    expect(parsed).toMatchObject({
      ...NASTY,
      msg: 'msg with "quotes"\nand a newline',
      error: 'setns(/var/run/netns/p): EBADF',
      big: '10',
    });
    expect(typeof parsed.circular).toBe('string');
  });

  it("a field named time, level or msg cannot overwrite the line's own", () => {
    const got = JSON.parse(formatLine('json', event({ msg: 'forged', level: 'error', time: 0 })));
    expect(got).toEqual({ time: T, level: 'info', msg: 'announced' });
  });
});

describe('--log-format=logfmt', () => {
  it('is one line of key=value pairs: time, level, msg first', () => {
    const line = formatLine('logfmt', event({ containerId: 'c1', round: 2, ips: ['10.88.0.5'] }));
    expect(line).toBe(`time=${T} level=info msg=announced containerId=c1 round=2 ips="[\\"10.88.0.5\\"]"\n`);
    const expected = { time: T, level: 'info', msg: 'announced', containerId: 'c1', round: '2', ips: '["10.88.0.5"]' };
    expect(readLogfmt(line)).toEqual(expected);
  });

  const quotesValueWithTitle =
    'quotes a value with spaces, quotes, =, backslashes or control characters, and an empty one; odd keys become _';
  it(quotesValueWithTitle, () => {
    const line = formatLine('logfmt', event({ ...NASTY, 'odd key"': 1 }, 'pod not ready: "eth0" down'));
    expect(line.slice(0, -1)).not.toContain('\n');
    const seen = readLogfmt(line);
    expect(seen).toEqual({ time: T, level: 'info', msg: 'pod not ready: "eth0" down', ...NASTY, odd_key_: '1' });
  });
});

describe('createLogger with a format', () => {
  it('keeps it across with(), and text stays `time LEVEL msg k=v`', () => {
    const json = capture('info', { daemon: 7 }, 'json');
    json.log.with({ containerId: 'c1' }).info('announced', { round: 1 });
    const text = capture('info', { daemon: 7 });
    text.log.with({ containerId: 'c1' }).info('announced', { round: 1, msg: 'x y' });
    const found = json.lines.map((l) => JSON.parse(l));
    expect(found).toEqual([{ time: T, level: 'info', msg: 'announced', daemon: 7, containerId: 'c1', round: 1 }]);
    expect(text.lines).toEqual([`${T} INFO announced daemon=7 containerId=c1 round=1 msg="x y"\n`]);
  });
});
