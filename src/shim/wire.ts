// Pure: the stream protocol between a CNI call (the shim) and the node's
// announcer, on the unix socket `announcer.sock` in stateDir. One connection
// per call. The shim writes one request line carrying its `deadline`; the
// announcer answers with one line, the end, and the shim waits for it until
// the deadline and no longer. A request without `deadline` (an older shim) is
// answered the older way: `ack` at once, `beat` while the command runs, then
// the end. Every line is one JSON object; JSON.stringify never writes a raw
// newline. Loaded on the shim's fast path: no schema library, no FFI.

import {
  DEFAULT_ADD_WAIT_MS,
  DEFAULT_GATEWAY_CHECK_MS,
  DEFAULT_PROBE_MS,
  DEFAULT_STATE_DIR,
  MAX_GATEWAY_CHECK_MS,
  MAX_PROBE_MS,
} from '../cni/option-bounds';

/** The protocol's version: a request of another version is refused. `deadline` is additive: still version 1. */
export const WIRE_VERSION = 1;

/** The largest stdin the shim forwards; a larger one is refused (code 5) naming its size. */
export const MAX_FORWARDED_STDIN = 1024 * 1024;
/** The largest request line the announcer reads (JSON escaping may grow stdin up to sixfold). */
export const MAX_REQUEST_LINE = 6 * MAX_FORWARDED_STDIN + 64 * 1024;

/** How long a shim waits for the announcer it starts to listen; a start marker older than this is stale. */
export const START_MS = 2000;

/**
 * For a request without `deadline` (an older shim): the announcer takes it only this long before its `ackBy` at the
 * latest, so that the `ack` reaches a shim that still waits.
 */
export const ACK_MARGIN_MS = 50;
/** For a request without `deadline` (an older shim): between the announcer's `beat` lines while its command runs. */
export const BEAT_MS = 100;

/**
 * What an ADD or CHECK waits beyond `addWaitMs` + `probeMs` + `gatewayCheckMs`: the announcer's own work, a busy loop,
 * a slow node.
 */
export const MARGIN_MS = 3000;
/** What DEL, GC and STATUS wait for the announcer's answer: they do not wait for a pod. */
export const BRIEF_MS = 2000;

/**
 * The longest an announcer takes from its decision to stop (idle, SIGTERM, a hand-over) to its exit, every request on
 * its socket answered or passed on meanwhile; a call passed on waits this much longer for the next announcer.
 */
export const STOP_MS = 2000;

/** What a request asks: a CNI command as it came, or a control operation (status, handover). */
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
   * starts at the process's start). Without `deadline` (an older shim): when the sender stops waiting for the `ack`;
   * the announcer takes the request only up to ACK_MARGIN_MS before it, else drops it and never runs it. This shim
   * sends its `deadline` here too, for an older announcer; this announcer then goes by `deadline` alone.
   */
  ackBy: number;
  /**
   * CLOCK_BOOTTIME ms until which the sender waits for the end. Present: the announcer writes no `ack` or `beat`, and
   * drops an ADD or CHECK it cannot finish acting on before it (DEL and GC run late too). Absent: an older shim.
   */
  deadline?: number;
};

/** One line from the announcer. */
export type WireReply =
  /** The request is taken: it runs once, here (only to a request without `deadline`). */
  | { ack: true }
  /** Still running (only to a request without `deadline`). */
  | { beat: true }
  /** A CNI command's end: what the plugin prints, and its exit status. */
  | { exit: number; stdout: string }
  /** A control operation's answer. */
  | { control: unknown }
  /** Not taken: `handover` (a newer build serves; start it), anything else (the reason, reported as an error). */
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
 * stdin is not a JSON object (the shim then reports what is wrong with it).
 */
export function stateDirOf(stdin: string): string | undefined {
  const config = parseObject(stdin);
  if (config === undefined) return undefined;
  const dir = config.stateDir;
  if (dir === undefined) return DEFAULT_STATE_DIR;
  return typeof dir === 'string' && dir.startsWith('/') && !dir.includes('\0') ? dir : undefined;
}

/**
 * How long the shim waits for the end of `command` on `config` (a JSON object): see MARGIN_MS and BRIEF_MS. ADD and
 * CHECK wait `addWaitMs`, plus `probeMs` under a conflictCheck, plus `gatewayCheckMs` under gatewayCheck require; an
 * option a pod may override counts at its worst: gatewayCheck as require, probeMs and gatewayCheckMs at their largest.
 */
export function waitMsOf(command: string | undefined, config: Record<string, unknown>): number {
  if (command !== 'ADD' && command !== 'CHECK') return BRIEF_MS;
  const overrides = Array.isArray(config.podOverrides) ? config.podOverrides : [];
  const wait = numberOr(config.addWaitMs, DEFAULT_ADD_WAIT_MS);
  const probe =
    config.conflictCheck === undefined || config.conflictCheck === 'off'
      ? 0
      : overrides.includes('probeMs')
        ? MAX_PROBE_MS
        : numberOr(config.probeMs, DEFAULT_PROBE_MS);
  const mayRequire = config.gatewayCheck === 'require' || overrides.includes('gatewayCheck');
  const gateway = !mayRequire
    ? 0
    : overrides.includes('gatewayCheckMs')
      ? MAX_GATEWAY_CHECK_MS
      : numberOr(config.gatewayCheckMs, DEFAULT_GATEWAY_CHECK_MS);
  return wait + probe + gateway + MARGIN_MS;
}

/**
 * A config's `onUnavailable`: `skip` only when it says so and its result cannot depend on the announcer (the
 * announcer refuses such a config with code 7, naming the field: src/cni/config.ts).
 */
export function onUnavailableOf(config: Record<string, unknown>): 'fail' | 'skip' {
  const overrides = Array.isArray(config.podOverrides) ? config.podOverrides : [];
  const allowed =
    config.mac !== 'ip-derived' &&
    config.conflictCheck !== 'fail' &&
    config.gatewayCheck !== 'require' &&
    !overrides.includes('mac') &&
    !overrides.includes('gatewayCheck');
  return config.onUnavailable === 'skip' && allowed ? 'skip' : 'fail';
}

/** `value` when a finite number from 0 to 60 s (the schema checks it exactly), else `otherwise`. */
function numberOr(value: unknown, otherwise: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 60_000 ? value : otherwise;
}
