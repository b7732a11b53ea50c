// Pure: the stream protocol between a CNI call (the shim, src/shim) and the node's announcer (src/daemon), on the
// unix socket `announcer.sock` in stateDir. It belongs to neither side. One connection per call: the call writes one
// request line carrying its `deadline`, the announcer answers with one line, and the call waits for it until the
// deadline and no longer. Every line is one JSON object (JSON.stringify never writes a raw newline). Loaded on the
// shim's fast path: no schema library, no FFI.
import {
  DEFAULT_ADD_WAIT_MS,
  DEFAULT_GATEWAY_CHECK_MS,
  DEFAULT_PROBE_MS,
  DEFAULT_STATE_DIR,
  MAX_GATEWAY_CHECK_MS,
  MAX_PROBE_MS,
} from './cni/option-bounds';

import type { GatewayVerdict } from './announce/gateway-verdict';
import { isJsonObject } from './cni/decode';

/** The protocol's version: a request of another version is refused by name. */
export const WIRE_VERSION = 1;

/** The largest stdin the shim forwards; a larger one is refused (code 5) naming its size. */
export const MAX_FORWARDED_STDIN = 1024 * 1024;
/** The largest request line the announcer reads (JSON escaping may grow stdin up to sixfold). */
export const MAX_REQUEST_LINE = 6 * MAX_FORWARDED_STDIN + 64 * 1024;

/** How long a shim waits for the announcer it starts to listen; a start marker older than this is stale. */
export const START_MS = 2000;

/**
 * The longest an announcer takes from its decision to stop (idle, SIGTERM, a hand-over) to its exit, every request on
 * its socket answered or passed on meanwhile; a call passed on waits this much longer for the next announcer.
 */
export const STOP_MS = 2000;

/**
 * What an ADD or CHECK waits beyond `addWaitMs` + `probeMs` + `gatewayCheckMs`: the announcer's own work, a busy loop,
 * a slow node.
 */
export const MARGIN_MS = 3000;
/** What DEL, GC and STATUS wait for the announcer's answer: they do not wait for a pod. */
export const BRIEF_MS = 2000;

/** What a request asks: a CNI command as it came, or a control operation. */
export type RequestBody = { cni: { env: Record<string, string>; stdin: string } } | { control: ControlRequest };

/** One request line. */
export type WireRequest = RequestBody & {
  v: number;
  /**
   * The sender's build: an announcer whose own executable was replaced hands over when another build's request comes.
   */
  build: string;
  /**
   * CLOCK_BOOTTIME ms (the clock of /proc/uptime, which every process reads alike) until which the sender waits for
   * the answer: the announcer drops an ADD or CHECK it cannot finish acting on before it (DEL and GC run late too).
   */
  deadline: number;
};

/** The control operations: the announcer's status, or (a starting resident announcer asks) to hand over to it. */
export type ControlRequest = { op: 'status' } | { op: 'handover' };

/** One answer line. */
export type WireReply =
  /** A CNI command's end: what the plugin prints, and its exit status. */
  | { exit: number; stdout: string }
  /** A control operation's answer. */
  | { control: unknown }
  /** Not taken: `handover` (send it to the next announcer), anything else (the reason, reported as an error). */
  | { refused: string };

/** The answer to a control request. */
export type ControlReply = { ok: true; status?: DaemonStatus } | { ok: false; error: string };

/** The error a resident announcer answers `handover` with: it never hands over to another resident one. */
export const RESIDENT_REFUSAL = 'a resident announcer serves this stateDir';

/** One attachment as `announcer status` shows it. */
export interface AttachmentStatus {
  network: string;
  containerId: string;
  ifname: string;
  netns: string;
  /** Milliseconds until the next round; absent when none is planned or the pod is not ready yet. */
  nextRoundInMs?: number;
  roundsSent: number;
  roundsPlanned: number;
  /** Waiting for the pod to become ready before round 1. */
  deferred: boolean;
  /** What the gateway check found so far (absent: off). */
  gateway?: GatewayVerdict;
}

/** What the announcer reports to `status`. */
export interface DaemonStatus {
  pid: number;
  attachments: AttachmentStatus[];
  counters: unknown;
}

/** The CNI_* variables of `env`, the ones a command reads. */
export function cniEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (k.startsWith('CNI_') && v !== undefined) out[k] = v;
  return out;
}

/** A line (request or answer), newline-terminated. */
export function encodeLine(line: WireRequest | WireReply): string {
  return `${JSON.stringify(line)}\n`;
}

/** The JSON object `text` holds; undefined when it is not JSON or not an object. */
export function parseObject(text: string): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return isJsonObject(value) ? value : undefined;
}

/** Decodes one answer line; undefined when it is not one. */
export function decodeReply(line: string): WireReply | undefined {
  const v = parseObject(line);
  if (v === undefined) return undefined;
  if (Number.isInteger(v.exit) && typeof v.stdout === 'string') return { exit: v.exit as number, stdout: v.stdout };
  if ('control' in v) return { control: v.control };
  if (typeof v.refused === 'string') return { refused: v.refused };
  return undefined;
}

/** The stateDir whose announcer serves `config`: its `stateDir` when an absolute path, else the default. */
export function stateDirOf(config: Record<string, unknown>): string | undefined {
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
  /** What `key` waits at worst: its largest value when a pod may set it. */
  const worst = (key: string, fallback: number, largest: number): number =>
    overrides.includes(key) ? largest : numberOr(config[key], fallback);
  const probing = config.conflictCheck !== undefined && config.conflictCheck !== 'off';
  const mayRequire = config.gatewayCheck === 'require' || overrides.includes('gatewayCheck');
  return (
    numberOr(config.addWaitMs, DEFAULT_ADD_WAIT_MS) +
    (probing ? worst('probeMs', DEFAULT_PROBE_MS, MAX_PROBE_MS) : 0) +
    (mayRequire ? worst('gatewayCheckMs', DEFAULT_GATEWAY_CHECK_MS, MAX_GATEWAY_CHECK_MS) : 0) +
    MARGIN_MS
  );
}

/** `value` when a finite number from 0 to 60 s (the schema checks it exactly), else `otherwise`. */
function numberOr(value: unknown, otherwise: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 60_000 ? value : otherwise;
}
