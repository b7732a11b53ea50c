// The structured formats of `announcer daemon --log-format`: every line parses
// alone (JSON.parse, or a logfmt reader written here from the format's rules),
// whatever a field holds; and the plugin's own text lines stay as they were.
import { describe, expect, it } from 'vitest';
import { formatLine, type LogEvent } from '../../src/log-format';
import { createLogger } from '../../src/log';
import { SysError } from '../../src/sys/sys-error';

const T = '2026-12-01T23:10:00.000Z';
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
    expect(JSON.parse(formatLine('json', event({ msg: 'forged', level: 'error', time: 0 })))).toEqual({
      time: T,
      level: 'info',
      msg: 'announced',
    });
  });
});

describe('--log-format=logfmt', () => {
  it('is one line of key=value pairs: time, level, msg first', () => {
    const line = formatLine('logfmt', event({ containerId: 'c1', round: 2, ips: ['10.88.0.5'] }));
    expect(line).toBe(`time=${T} level=info msg=announced containerId=c1 round=2 ips="[\\"10.88.0.5\\"]"\n`);
    expect(readLogfmt(line)).toEqual({
      time: T,
      level: 'info',
      msg: 'announced',
      containerId: 'c1',
      round: '2',
      ips: '["10.88.0.5"]',
    });
  });

  const quotesValueWithTitle =
    'quotes a value with spaces, quotes, =, backslashes or control characters, and an empty one; odd keys become _';
  it(quotesValueWithTitle, () => {
    const line = formatLine('logfmt', event({ ...NASTY, 'odd key"': 1 }, 'pod not ready: "eth0" down'));
    expect(line.slice(0, -1)).not.toContain('\n');
    expect(readLogfmt(line)).toEqual({
      time: T,
      level: 'info',
      msg: 'pod not ready: "eth0" down',
      ...NASTY,
      odd_key_: '1',
    });
  });
});

describe('createLogger with a format', () => {
  it('keeps it across with(), and text stays `time LEVEL msg k=v`', () => {
    const lines: string[] = [];
    createLogger(
      (l) => lines.push(l),
      'info',
      { daemon: 7 },
      () => new Date(T),
      'json',
    )
      .with({ containerId: 'c1' })
      .info('announced', { round: 1 });
    createLogger(
      (l) => lines.push(l),
      'info',
      { daemon: 7 },
      () => new Date(T),
    )
      .with({ containerId: 'c1' })
      .info('announced', { round: 1, msg: 'x y' });
    expect(JSON.parse(lines[0]!)).toEqual({
      time: T,
      level: 'info',
      msg: 'announced',
      daemon: 7,
      containerId: 'c1',
      round: 1,
    });
    expect(lines[1]).toBe(`${T} INFO announced daemon=7 containerId=c1 round=1 msg="x y"\n`);
  });
});
