// A small line logger: lines go to a file (config `logFile`) or nowhere, and from an announcer run with
// `--log-format` (the DaemonSet's) to its stdout too (src/daemon/daemon-verb.ts). A CNI call's own stdout belongs to
// the CNI protocol. One event is one line: `text` is the plugin's own (`time LEVEL msg k=v…`, for logFile); `json`
// and `logfmt` are for the resident announcer's stdout, where `kubectl logs` and log collectors read them: every line
// parses alone, whatever a field holds.
import type { LogLevel } from './cni/option-schema';
import { appendToRegularFile } from './sys/safe-file';
import { attempt } from './sys/sys-error';

export type { LogLevel } from './cni/option-schema';
const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

/** The formats of a log line. */
export type LogFormat = 'text' | 'json' | 'logfmt';

/** One event: when, how bad, what, and its fields (undefined ones left out). */
export interface LogEvent {
  time: Date;
  level: LogLevel;
  msg: string;
  fields: Record<string, unknown>;
}

/** Structured log lines carrying the attachment's container ID and ifname. */
export interface Logger {
  error(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  debug(msg: string, fields?: Record<string, unknown>): void;
  /** A logger whose lines also carry `fields`. */
  with(fields: Record<string, unknown>): Logger;
}

/** Where log lines go. */
export type LogSink = (line: string) => void;

/**
 * A logger writing lines at or above `level` to `sink`: `time LEVEL msg k=v…` (`text`), or one JSON object or logfmt
 * line per event.
 */
export function createLogger(
  sink: LogSink,
  level: LogLevel,
  base: Record<string, unknown> = {},
  now: () => Date = () => new Date(),
  format: LogFormat = 'text',
): Logger {
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    if (RANK[lvl] > RANK[level]) return;
    sink(formatLine(format, { time: now(), level: lvl, msg, fields: { ...base, ...fields } }));
  };
  return {
    error: (m, f) => emit('error', m, f),
    warn: (m, f) => emit('warn', m, f),
    info: (m, f) => emit('info', m, f),
    debug: (m, f) => emit('debug', m, f),
    with: (fields) => createLogger(sink, level, { ...base, ...fields }, now, format),
  };
}

/**
 * A sink appending to the regular file `file` (created 0600); never blocks or throws, and refuses a FIFO, device or
 * symlink there.
 */
export function fileSink(file: string): LogSink {
  // Logging must never break or hang the CNI operation.
  return (line) => void attempt(() => appendToRegularFile(file, line));
}

/** A logger that drops everything. */
export const silentLogger: Logger = createLogger(() => {}, 'error');

/** A logger writing every line to both `a` and `b`. */
export function teeLogger(a: Logger, b: Logger): Logger {
  return {
    error: (m, f) => (a.error(m, f), b.error(m, f)),
    warn: (m, f) => (a.warn(m, f), b.warn(m, f)),
    info: (m, f) => (a.info(m, f), b.info(m, f)),
    debug: (m, f) => (a.debug(m, f), b.debug(m, f)),
    with: (fields) => teeLogger(a.with(fields), b.with(fields)),
  };
}

/**
 * A command's logger: to its config's logFile at its logLevel, each line naming the attachment; silent without a
 * logFile.
 */
export function commandLogger(
  config: { logFile?: string | undefined; logLevel: LogLevel },
  ids: { containerId?: string | undefined; ifname?: string | undefined },
): Logger {
  return config.logFile
    ? createLogger(fileSink(config.logFile), config.logLevel, { containerId: ids.containerId, ifname: ids.ifname })
    : silentLogger;
}

/** Pure: the event as one line in `format`, newline included. */
export function formatLine(format: LogFormat, e: LogEvent): string {
  const fields = Object.entries(e.fields).filter(([k, v]) => v !== undefined && (format === 'text' || !CORE.has(k)));
  if (format === 'json') return `${jsonLine(e, fields)}\n`;
  if (format === 'logfmt') {
    const pairs = [['time', e.time.toISOString()], ['level', e.level], ['msg', e.msg], ...fields].map(
      ([k, v]) => `${logfmtKey(k as string)}=${logfmtValue(v)}`,
    );
    return `${pairs.join(' ')}\n`;
  }
  const kv = fields.map(([k, v]) => `${k}=${textValue(v)}`).join(' ');
  return `${e.time.toISOString()} ${e.level.toUpperCase()} ${e.msg}${kv ? ` ${kv}` : ''}\n`;
}

/** Keys every structured line has first; a field of the same name is left out. */
const CORE = new Set(['time', 'level', 'msg']);

/** JSON.stringify's replacer: an Error as its message, a BigInt as its digits. */
function plain(_key: string, v: unknown): unknown {
  if (v instanceof Error) return v.message;
  return typeof v === 'bigint' ? v.toString() : v;
}

function jsonLine(e: LogEvent, fields: [string, unknown][]): string {
  const head = { time: e.time.toISOString(), level: e.level, msg: e.msg };
  try {
    return JSON.stringify({ ...head, ...Object.fromEntries(fields) }, plain);
  } catch {
    // A circular field: each field alone, the bad one as text.
    return JSON.stringify({
      ...head,
      ...Object.fromEntries(
        fields.map(([k, v]) => [k, safe(() => JSON.parse(JSON.stringify(v, plain) ?? 'null'), String(v))]),
      ),
    });
  }
}

/** A logfmt key: letters, digits, `_`, `.`, `-`; anything else becomes `_`. */
function logfmtKey(k: string): string {
  return k.replace(/[^A-Za-z0-9_.-]/g, '_') || '_';
}

/**
 * A logfmt value: bare when it holds no space, quote, `=`, backslash or control character; else quoted with JSON's
 * escapes.
 */
function logfmtValue(v: unknown): string {
  const s = fieldText(v, plain);
  // eslint-disable-next-line no-control-regex
  return s === '' || /[\s"=\\\u0000-\u001f\u007f]/.test(s) ? JSON.stringify(s) : s;
}

/** A text line's value: bare, or quoted with JSON's escapes when it holds a space, quote or `=`. */
function textValue(v: unknown): string {
  const s = fieldText(v);
  return /[\s"=]/.test(s) ? JSON.stringify(s) : s;
}

/** A field as text: a string as it is, an Error as its message, anything else as JSON (or String() if it is not). */
function fieldText(v: unknown, replacer?: typeof plain): string {
  if (typeof v === 'string') return v;
  if (v instanceof Error) return v.message;
  return safe(() => JSON.stringify(v, replacer) ?? String(v), String(v));
}

/** `work()`, or `otherwise` when it throws (a log line must never throw). */
function safe<T>(work: () => T, otherwise: T): T {
  try {
    return work();
  } catch {
    return otherwise;
  }
}
