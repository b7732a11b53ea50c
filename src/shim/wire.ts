// Pure: the stream protocol between a CNI call (the shim) and the node's
// announcer, on the unix socket `announcer.sock` in stateDir. One connection
// per call. The shim writes one request line; the announcer answers with
// lines: `ack` at once, `beat` while the command runs, then the end. Every
// line is one JSON object; JSON.stringify never writes a raw newline. Loaded
// on the shim's fast path: no schema library, no FFI.

/** The protocol's version: a request of another version is refused, and the shim runs the command itself. */
export const WIRE_VERSION = 1;

/** The largest stdin the shim forwards; a larger one is handled in-process (which refuses past 16 MiB). */
export const MAX_FORWARDED_STDIN = 1024 * 1024;
/** The largest request line the announcer reads (JSON escaping may grow stdin up to sixfold). */
export const MAX_REQUEST_LINE = 6 * MAX_FORWARDED_STDIN + 64 * 1024;

/** Without an `ack` this long after the request went out, the announcer is taken for hung. */
export const ACK_MS = 300;
/** The announcer's socket in stateDir (mode 0600). */
export const ANNOUNCER_SOCKET = 'announcer.sock';
/** Created O_EXCL by the shim that starts the announcer; the announcer removes it once it listens. */
export const START_MARKER = 'announcer-start.marker';
/** How long a shim waits for the announcer it starts to listen; a start marker older than this is stale. */
export const START_MS = 2000;

/**
 * The announcer takes a command only this long before its `ackBy` at the latest, so that the `ack` reaches a shim that
 * still waits.
 */
export const ACK_MARGIN_MS = 50;
/** Between the announcer's lines while a command runs. */
export const BEAT_MS = 100;
/** Silence this long after the `ack` (no `beat`, no end) and the announcer is taken for hung. */
export const SILENCE_MS = 500;

/** What a request asks: a CNI command as it came, or a control operation (status, sync, cancel, count). */
export type RequestBody =
  | { cni: { env: Record<string, string>; stdin: string } }
  | { control: Record<string, unknown> };

/** One request. */
export type WireRequest = RequestBody & {
  v: number;
  /**
   * The build of the sender: an announcer whose own executable was replaced hands over when a request from another
   * build comes.
   */
  build: string;
  /**
   * CLOCK_BOOTTIME ms (the clock of /proc/uptime, which every process reads alike; not process.hrtime, which under Bun
   * starts at the process's start) after which the sender no longer waits for the `ack`: the announcer then drops the
   * request unread, and never runs it.
   */
  ackBy: number;
};

/** One line from the announcer. */
export type WireReply =
  /** The request is taken: it runs once, here. */
  | { ack: true }
  /** Still running. */
  | { beat: true }
  /** A CNI command's end: what the plugin prints, and its exit status. */
  | { exit: number; stdout: string }
  /** A control operation's answer. */
  | { control: unknown }
  /** Not taken: `handover` (a newer build serves; start it), anything else (run the command yourself). */
  | { refused: string };

/** The CNI_* variables of `env`, the ones a command reads. */
export function cniEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (k.startsWith('CNI_') && v !== undefined) out[k] = v;
  return out;
}

/** The request line, newline-terminated. */
export function encodeRequest(request: WireRequest): string {
  return `${JSON.stringify(request)}\n`;
}

/** A reply line, newline-terminated. */
export function encodeReply(reply: WireReply): string {
  return `${JSON.stringify(reply)}\n`;
}

/** The JSON object `text` holds; undefined when it is not JSON or not an object. */
export function parseObject(text: string): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Decodes one reply line; undefined when it is not one. */
export function decodeReply(line: string): WireReply | undefined {
  const v = parseObject(line);
  if (v === undefined) return undefined;
  if (v.ack === true) return { ack: true };
  if (v.beat === true) return { beat: true };
  if (Number.isInteger(v.exit) && typeof v.stdout === 'string') return { exit: v.exit as number, stdout: v.stdout };
  if ('control' in v) return { control: v.control };
  if (typeof v.refused === 'string') return { refused: v.refused };
  return undefined;
}

/** Splits `buffered` text at newlines: the complete lines, and what is left of an unfinished one. */
export function splitLines(buffered: string): { lines: string[]; rest: string } {
  const parts = buffered.split('\n');
  const rest = parts.pop() ?? '';
  return { lines: parts, rest };
}

/**
 * The stateDir whose announcer serves a config: its `stateDir` when an absolute path, else the default; undefined when
 * stdin is not a JSON object (the command then runs in-process, which reports why).
 */
export function stateDirOf(stdin: string): string | undefined {
  const config = parseObject(stdin);
  if (config === undefined) return undefined;
  const dir = config.stateDir;
  if (dir === undefined) return DEFAULT_STATE_DIR;
  return typeof dir === 'string' && dir.startsWith('/') && !dir.includes('\0') ? dir : undefined;
}

/** `stateDir`'s default, for the options' table too. */
export const DEFAULT_STATE_DIR = '/run/cni-announcer';
