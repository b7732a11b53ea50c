// Pure: the announcer's control requests and replies, carried as `control` on
// its socket (src/shim/wire.ts). Requests name an attachment by its record file
// in stateDir; the record, written under the attachment's lock, is the truth.
import { z } from 'zod/mini';
import type { HostRequest } from '../announce/host-requests';
import { NO_FRAMES } from '../announce/round';
import { bool, check, obj, str, strictShape } from '../cni/zod-checks';
import { stateEntryKind } from '../state-files';
import type { Counters } from './counters';

/** What a client asks: what a command tells its host (sync, cancel, count), or: */
export type Request =
  | HostRequest
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

/** A record's file name, never a path: requests cannot point outside stateDir. */
const recordName = str('bad record name').check(
  z.refine((name: string) => stateEntryKind(name) === 'record' && !name.includes('/') && name.length <= 255, {
    error: 'bad record name',
  }),
);
/** A count a client reports: an integer from 0 below 1e6, else 0. */
const smallCount = z.catch(z.int().check(z.minimum(0), z.lt(1e6)), 0);
/** Frame counts, each a small count; anything but an object counts nothing. */
const frameCounts = z.catch(strictShape({ garpRequest: smallCount, garpReply: smallCount, na: smallCount }), () => ({
  ...NO_FRAMES,
}));

const requestSchema = z.discriminatedUnion(
  'op',
  [
    strictShape({ op: z.literal('sync'), record: recordName, sent: frameCounts, conflicts: smallCount }),
    strictShape({ op: z.literal('cancel'), record: recordName }),
    strictShape({ op: z.literal('count'), sent: frameCounts, conflicts: smallCount }),
    strictShape({ op: z.literal('status') }),
    strictShape({ op: z.literal('handover') }),
  ],
  { error: (iss) => (isObject(iss.input) ? `unknown op ${JSON.stringify(iss.input.op)}` : 'not an object') },
);

/** Checks a decoded request; a string says what is wrong with it. */
export function checkControlRequest(value: unknown): Request | string {
  const checked = check(requestSchema, value);
  return checked.ok ? (checked.value as Request) : checked.issues[0]!.message;
}

const attachmentStatus = obj({
  network: str(),
  containerId: str(),
  ifname: str(),
  netns: str(),
  nextRoundInMs: z.optional(z.number()),
  roundsSent: z.number(),
  roundsPlanned: z.number(),
  deferred: bool(),
});
const statusSchema = obj({ pid: z.int(), attachments: z.array(attachmentStatus), counters: obj({}) });
const replySchema = z.discriminatedUnion('ok', [
  obj({ ok: z.literal(true), status: z.optional(statusSchema) }),
  obj({ ok: z.literal(false), error: str() }),
]);

/** A reply as the announcer sent it (the shim decoded the line); undefined when it is not one. */
export function checkReply(value: unknown): Reply | undefined {
  const checked = check(replySchema, value);
  return checked.ok ? (checked.value as Reply) : undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
