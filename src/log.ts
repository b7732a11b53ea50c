// A small line logger. The plugin's stdout belongs to the CNI protocol, so
// logs go to a file (config `logFile`) or nowhere.
import type { LogLevel } from './cni/option-schema';
import { appendToRegularFile } from './sys/append-file';

export type { LogLevel } from './cni/option-schema';
const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

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

/** A logger writing `time level msg k=v…` lines at or above `level` to `sink`. */
export function createLogger(sink: LogSink, level: LogLevel, base: Record<string, unknown> = {}, now: () => Date = () => new Date()): Logger {
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    if (RANK[lvl] > RANK[level]) return;
    const all = { ...base, ...fields };
    const kv = Object.entries(all)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${formatValue(v)}`)
      .join(' ');
    sink(`${now().toISOString()} ${lvl.toUpperCase()} ${msg}${kv ? ` ${kv}` : ''}\n`);
  };
  return {
    error: (m, f) => emit('error', m, f),
    warn: (m, f) => emit('warn', m, f),
    info: (m, f) => emit('info', m, f),
    debug: (m, f) => emit('debug', m, f),
    with: (fields) => createLogger(sink, level, { ...base, ...fields }, now),
  };
}

/** A sink appending to the regular file `file` (created 0600); never blocks or throws, and refuses a FIFO, device or symlink there. */
export function fileSink(file: string): LogSink {
  return (line) => {
    try {
      appendToRegularFile(file, line);
    } catch {
      // logging must never break or hang the CNI operation
    }
  };
}

/** A logger that drops everything. */
export const silentLogger: Logger = createLogger(() => {}, 'error');

function formatValue(v: unknown): string {
  const s = typeof v === 'string' ? v : v instanceof Error ? v.message : safeJson(v);
  return /[\s"=]/.test(s) ? JSON.stringify(s) : s;
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v); // BigInt, circular objects: a log line must never throw
  }
}

/** A command's logger: to its config's logFile at its logLevel, each line naming the attachment; silent without a logFile. */
export function commandLogger(
  config: { logFile?: string | undefined; logLevel: LogLevel },
  ids: { containerId?: string | undefined; ifname?: string | undefined },
): Logger {
  return config.logFile ? createLogger(fileSink(config.logFile), config.logLevel, { containerId: ids.containerId, ifname: ids.ifname }) : silentLogger;
}
