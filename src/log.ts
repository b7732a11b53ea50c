// A small line logger: lines go to a file (config `logFile`) or nowhere, and
// from an announcer run with `--log-format` (the DaemonSet's) to its stdout too
// (src/daemon/daemon-verb.ts). A CNI call's own stdout belongs to the CNI protocol.
import type { LogLevel } from './cni/option-schema';
import { formatLine, type LogFormat } from './log-format';
import { appendToRegularFile } from './sys/safe-file';

export type { LogLevel } from './cni/option-schema';
export type { LogFormat } from './log-format';
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
