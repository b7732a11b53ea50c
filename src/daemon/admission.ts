// What the announcer takes from its socket: a request line checked before anything acts on it, whether a CNI
// command read at a given time is still wanted, and the gate every command acts through. An ADD or CHECK is dropped
// once its deadline has passed or its client has gone; DEL, GC and STATUS run however late (the spec asks DEL to
// succeed as far as it can, and the shim has told its runtime so). Times are CLOCK_BOOTTIME ms, which every process
// reads alike.
import { z } from 'zod/mini';
import { NotWantedError } from '../announce/errors';
import type { CommandGate } from '../announce/context';
import { check, obj, str, strictShape } from '../cni/zod-checks';
import { WIRE_VERSION, type ControlRequest } from '../protocol';

/** A checked request: a CNI command as it came, or a control operation. */
export type CheckedRequest = { build: string; deadline: number } & (
  | { kind: 'cni'; env: Record<string, string>; stdin: string }
  | { kind: 'control'; request: ControlRequest }
);

/** An object, else nothing: which of `cni` and `control` a line carries. */
const body = z.catch(z.optional(obj({})), undefined);

/** The envelope, its fields in the order they are checked. */
const envelope = z.looseObject(
  {
    v: z.literal(WIRE_VERSION, {
      error: (iss) => `protocol version ${JSON.stringify(iss.input)} (this announcer speaks ${WIRE_VERSION})`,
    }),
    build: str('bad build').check(z.maxLength(128, { error: 'bad build' })),
    deadline: z.number({ error: 'bad deadline' }),
    cni: body,
    control: body,
  },
  { error: 'not an object' },
);

/** A CNI command: CNI_* variables only, and stdin as text. */
const cniCommand = obj({
  env: z.record(str().check(z.startsWith('CNI_')), str('bad cni.env'), { error: 'bad cni.env' }),
  stdin: str('bad cni.stdin'),
});

const controlRequest = z.discriminatedUnion(
  'op',
  [strictShape({ op: z.literal('status') }), strictShape({ op: z.literal('handover') })],
  { error: (iss) => (isObject(iss.input) ? `unknown op ${JSON.stringify(iss.input.op)}` : 'not an object') },
);

/** The request on `line`, or what is wrong with it. */
export function checkRequestLine(line: string): CheckedRequest | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return 'not JSON';
  }
  const head = check(envelope, value);
  if (!head.ok) return head.issues[0]!.message;
  const { build, deadline, cni, control } = head.value;
  if (cni !== undefined) {
    const command = check(cniCommand, cni);
    if (!command.ok) return command.issues[0]!.message;
    return { kind: 'cni', build, deadline, env: command.value.env, stdin: command.value.stdin };
  }
  if (control === undefined) return 'neither cni nor control';
  const request = check(controlRequest, control);
  return request.ok ? { kind: 'control', build, deadline, request: request.value } : request.issues[0]!.message;
}

/** A CNI command as it came, and its gate. */
export type CniCommand = Extract<CheckedRequest, { kind: 'cni' }> & { gate: Gate };

/** Whether `command` (CNI_COMMAND) is dropped once no one waits for it: ADD and CHECK. */
export function droppedLate(command: string | undefined): boolean {
  return command === 'ADD' || command === 'CHECK';
}

/**
 * Whether a taken command's result is still wanted: always for DEL, GC and STATUS; for ADD and CHECK while
 * `connected` and before `deadline` (boot ms).
 */
export function wantedWhile(
  command: string | undefined,
  deadline: number,
  bootMs: () => number,
  connected: () => boolean,
): () => boolean {
  if (!droppedLate(command)) return () => true;
  return () => bootMs() < deadline && connected();
}

/**
 * What a hosted command may still do, asked before each of its side effects: its result is wanted (wantedWhile) and
 * the announcer has not stopped it. Whether it has acted yet (sent a frame, set a MAC, written a record) decides what a
 * stopping announcer does with it: one that has not is passed on to the next announcer; one that has is let finish,
 * or stopped. Stopping it also ends the waits it is in: they reject with `signal`'s reason, a NotWantedError.
 */
export class Gate implements CommandGate {
  private readonly abort = new AbortController();
  /** Rejects the command's waits once it is stopped. */
  readonly signal = this.abort.signal;
  /** Whether the command has acted: a stop can no longer pass it on. */
  acted = false;

  constructor(private readonly wanted: () => boolean) {}

  stopReason(): string | undefined {
    if (this.signal.aborted) return (this.signal.reason as NotWantedError).why;
    return this.wanted() ? undefined : NotWantedError.CALLER_GONE;
  }

  acting(): void {
    this.acted = true;
  }

  /** Stops the command for `why`: it may act no more, and its waits end. */
  stop(why: string): void {
    if (!this.signal.aborted) this.abort.abort(new NotWantedError('the end of its wait', 0, why));
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
