// Pure: the announcer's control requests and replies, carried as `control` on
// its socket (src/shim/wire.ts): `status` and `handover`. The ops a shim of the
// previous release sent after running a command in-process (sync, count,
// cancel) are refused by name.
import type { GatewayVerdict } from '../announce/gateway-verdict';
import { gatewayVerdictSchema } from '../announce/record-schema';
import { once } from '../once';
import { z } from 'zod/mini';
import { bool, check, obj, str, strictShape } from '../cni/zod-checks';
import type { Counters } from './counters';

/** What a client asks: the announcer's status, or: */
export type Request =
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
  /** What the gateway check found so far (absent: off, or from before the check). */
  gateway?: GatewayVerdict;
}

/** What the background announcer reports. */
export interface DaemonStatus {
  pid: number;
  attachments: AttachmentStatus[];
  counters: Counters;
}

/** The answer to a request. */
export type Reply = { ok: true; status?: DaemonStatus } | { ok: false; error: string };

/**
 * The ops of the previous release's shim, which ran a command in-process and then reconciled with the announcer: this
 * one runs every command itself.
 */
const RETIRED_OPS: readonly unknown[] = ['sync', 'count', 'cancel'];

/**
 * The refusal of a retired op (sync, count, cancel), naming it and what becomes of its record; undefined for any other
 * request.
 */
export function retiredOpRefusal(value: unknown): string | undefined {
  if (!isObject(value) || !RETIRED_OPS.includes(value.op)) return undefined;
  return (
    `op ${JSON.stringify(value.op)} is retired: this announcer runs every CNI command itself; ` +
    'a record written by an older shim is taken up at the next announcer start, or removed by DEL or GC'
  );
}

const requestSchema = z.discriminatedUnion(
  'op',
  [strictShape({ op: z.literal('status') }), strictShape({ op: z.literal('handover') })],
  { error: (iss) => (isObject(iss.input) ? `unknown op ${JSON.stringify(iss.input.op)}` : 'not an object') },
);

/** Checks a decoded request; a string says what is wrong with it. */
export function checkControlRequest(value: unknown): Request | string {
  const checked = check(requestSchema, value);
  return checked.ok ? (checked.value as Request) : checked.issues[0]!.message;
}

// Built on first use: only a client (status, announce) checks a reply.
const replySchema = once(() => {
  const attachmentStatus = obj({
    network: str(),
    containerId: str(),
    ifname: str(),
    netns: str(),
    nextRoundInMs: z.optional(z.number()),
    roundsSent: z.number(),
    roundsPlanned: z.number(),
    deferred: bool(),
    gateway: z.optional(gatewayVerdictSchema()),
  });
  const statusSchema = obj({ pid: z.int(), attachments: z.array(attachmentStatus), counters: obj({}) });
  return z.discriminatedUnion('ok', [
    obj({ ok: z.literal(true), status: z.optional(statusSchema) }),
    obj({ ok: z.literal(false), error: str() }),
  ]);
});

/** A reply as the announcer sent it (the shim decoded the line); undefined when it is not one. */
export function checkReply(value: unknown): Reply | undefined {
  const checked = check(replySchema(), value);
  return checked.ok ? (checked.value as Reply) : undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
