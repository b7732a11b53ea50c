// Pure: the announcer's control requests and replies, carried as `control` on
// its socket (src/shim/wire.ts). Requests name an attachment by its record file
// in stateDir; the record, written under the attachment's lock, is the truth.
import { NO_FRAMES, type FrameCounts } from '../announce/round';
import type { Counters } from './counters';
import { decodeSettings, type DaemonSettings } from './settings';

/** What a client asks. */
export type Request =
  /** Read this record again and (re)schedule its job; `sent` and `conflicts` are what ADD's round 1 sent and its probe left out. */
  | { op: 'sync'; record: string; sent: FrameCounts; conflicts?: number; settings?: DaemonSettings }
  /** Forget this attachment: once answered, nothing more is sent for it. */
  | { op: 'cancel'; record: string }
  /** Count frames an ADD sent, and addresses its probe left out, without needing background work. */
  | { op: 'count'; sent: FrameCounts; conflicts?: number; settings?: DaemonSettings }
  | { op: 'status' }
  /** Stop serving and hand over to the caller, as on an upgrade (asked by a starting resident announcer). */
  | { op: 'handover' };

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
}

/** What the background announcer reports. */
export interface DaemonStatus {
  pid: number;
  attachments: AttachmentStatus[];
  counters: Counters;
}

/** The answer to a request. */
export type Reply = { ok: true; status?: DaemonStatus } | { ok: false; error: string };

/** Checks a decoded request; a string says what is wrong with it. */
export function checkControlRequest(value: unknown): Request | string {
  if (!isObject(value)) return 'not an object';
  switch (value.op) {
    case 'sync':
      return isRecordName(value.record)
        ? { op: 'sync', record: value.record, sent: frameCounts(value.sent), conflicts: smallCount(value.conflicts), ...settingsOf(value.settings) }
        : 'bad record name';
    case 'cancel':
      return isRecordName(value.record) ? { op: 'cancel', record: value.record } : 'bad record name';
    case 'count':
      return { op: 'count', sent: frameCounts(value.sent), conflicts: smallCount(value.conflicts), ...settingsOf(value.settings) };
    case 'status':
      return { op: 'status' };
    case 'handover':
      return { op: 'handover' };
    default:
      return `unknown op ${JSON.stringify(value.op)}`;
  }
}

/** A reply as the announcer sent it (the shim decoded the line); undefined when it is not one. */
export function checkReply(value: unknown): Reply | undefined {
  return isObject(value) && typeof value.ok === 'boolean' ? (value as Reply) : undefined;
}

/** A record's file name, never a path: requests cannot point outside stateDir. */
function isRecordName(name: unknown): name is string {
  return typeof name === 'string' && name.endsWith('.json') && !name.includes('/') && !name.startsWith('.') && name.length <= 255;
}

function frameCounts(value: unknown): FrameCounts {
  if (!isObject(value)) return { ...NO_FRAMES };
  return { garpRequest: smallCount(value.garpRequest), garpReply: smallCount(value.garpReply), na: smallCount(value.na) };
}

/** `{ settings }` when they are valid, else nothing: the announcer keeps its own. */
function settingsOf(value: unknown): { settings?: DaemonSettings } {
  const settings = decodeSettings(value);
  return settings ? { settings } : {};
}

/** A count a client reports: an integer from 0 below 1e6, else 0. */
function smallCount(v: unknown): number {
  return Number.isInteger(v) && (v as number) >= 0 && (v as number) < 1e6 ? (v as number) : 0;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
