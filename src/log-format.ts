// Pure: one log event as one line. `text` is the plugin's own (`time LEVEL msg
// k=v…`, for logFile); `json` and `logfmt` are for the resident announcer's
// stdout (`announcer daemon --log-format`), where `kubectl logs` and log
// collectors read them: every line parses alone, whatever a field holds.
import type { LogLevel } from './cni/option-schema';

/** The formats of a log line. */
export type LogFormat = 'text' | 'json' | 'logfmt';

/** One event: when, how bad, what, and its fields (undefined ones left out). */
export interface LogEvent {
  time: Date;
  level: LogLevel;
  msg: string;
  fields: Record<string, unknown>;
}

/** The event as one line in `format`, newline included. */
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
  const s =
    typeof v === 'string'
      ? v
      : v instanceof Error
        ? v.message
        : safe(() => JSON.stringify(v, plain) ?? String(v), String(v));
  // eslint-disable-next-line no-control-regex
  return s === '' || /[\s"=\\\u0000-\u001f\u007f]/.test(s) ? JSON.stringify(s) : s;
}

function textValue(v: unknown): string {
  const s =
    typeof v === 'string' ? v : v instanceof Error ? v.message : safe(() => JSON.stringify(v) ?? String(v), String(v));
  return /[\s"=]/.test(s) ? JSON.stringify(s) : s;
}

/** `work()`, or `otherwise` when it throws (a log line must never throw). */
function safe<T>(work: () => T, otherwise: T): T {
  try {
    return work();
  } catch {
    return otherwise;
  }
}
