// Pure: whether the announcer takes a CNI command it has just read, and until when its result is
// wanted. A request with `deadline` (this build's shim): an ADD or CHECK is dropped once the deadline
// has passed, or its client has gone; DEL, GC and STATUS run however late (the spec asks DEL to
// succeed as far as it can, and the shim has told its runtime so). A request without it (an older
// shim, which runs the command itself once it stops waiting for the `ack` at `ackBy`): taken only
// before ackBy - ACK_MARGIN_MS. Both times are CLOCK_BOOTTIME ms, which every process reads alike.
import { NotWantedError } from '../announce/errors';
import type { CommandGate } from '../announce/wanted';
import { ACK_MARGIN_MS } from '../shim/wire';

/** A CNI command as it came, and its gate: whether it may still act (see Gate). */
export interface CniCommand {
  env: Record<string, string>;
  stdin: string;
  build: string;
  gate: Gate;
}

/**
 * What a hosted command may still do, asked before each of its side effects: its result is wanted (wantedWhile) and
 * the announcer has not stopped it. Whether it has acted yet (sent a frame, set a MAC, written a record) decides what a
 * stopping announcer does with it: one that has not is passed on to the next announcer; one that has is let finish,
 * or stopped. Stopping it also ends the waits it is in: they reject with `signal`'s reason, a NotWantedError.
 */
export class Gate implements CommandGate {
  private actedYet = false;
  private readonly abort = new AbortController();

  constructor(private readonly wanted: () => boolean) {}

  /** Rejects the command's waits once it is stopped. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** Whether the command has acted: a stop can no longer pass it on. */
  get acted(): boolean {
    return this.actedYet;
  }

  stopReason(): string | undefined {
    if (this.abort.signal.aborted) return (this.abort.signal.reason as NotWantedError).why;
    return this.wanted() ? undefined : NotWantedError.CALLER_GONE;
  }

  acting(): void {
    this.actedYet = true;
  }

  /** Stops the command for `why`: it may act no more, and its waits end. */
  stop(why: string): void {
    if (!this.abort.signal.aborted) this.abort.abort(new NotWantedError('the end of its wait', 0, why));
  }
}

/** The commands dropped when no one waits for them any more. */
const DROPPED_LATE = ['ADD', 'CHECK'];

/** Whether `command` (CNI_COMMAND) is dropped once no one waits for it. */
export function droppedLate(command: string | undefined): boolean {
  return DROPPED_LATE.includes(command ?? '');
}

/** Whether a request read at `now` comes too late to be taken at all. */
export function tooLate(
  request: { ackBy: number; deadline?: number; command?: string | undefined },
  now: number,
): boolean {
  if (request.deadline === undefined) return now > request.ackBy - ACK_MARGIN_MS;
  return now >= request.deadline && droppedLate(request.command);
}

/**
 * Whether a taken command's result is still wanted: always for DEL, GC and STATUS; for ADD and CHECK while `connected`
 * and before `deadline` (boot ms; none for an older shim, which beats keep waiting).
 */
export function wantedWhile(
  command: string | undefined,
  deadline: number | undefined,
  bootMs: () => number,
  connected: () => boolean,
): () => boolean {
  if (!droppedLate(command)) return () => true;
  return () => (deadline === undefined || bootMs() < deadline) && connected();
}
