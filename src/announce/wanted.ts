// Whether a command may still act: asked before each side effect (a MAC, the probe, round 1, the record, a DEL's
// removal). The announcer answers from the request's connection and deadline, and from its own stop
// (src/daemon/admission.ts's Gate).
import type { Logger } from '../log';
import { NotWantedError } from './errors';

/** A command's gate, as the commands see it. */
export interface CommandGate {
  /** Why the command must not act now (its caller gone, the announcer stopping); undefined while it may. */
  stopReason(): string | undefined;
  /** Notes that the command acts: a stopping announcer no longer passes it on to the next one. */
  acting(): void;
}

/**
 * Throws NotWantedError (logged, with the frames sent before) once the command may no longer act; else notes that it
 * acts now, unless `acts` is false (the step may turn out to change nothing).
 */
export function requireWanted(deps: { gate: CommandGate; log: Logger }, step: string, sent = 0, acts = true): void {
  const why = deps.gate.stopReason();
  if (why === undefined) {
    if (acts) deps.gate.acting();
    return;
  }
  deps.log.warn(`${why}: ADD stops and undoes what it did`, { before: step, framesSentBefore: sent });
  throw new NotWantedError(step, sent, why);
}

/** Throws NotWantedError once the command may no longer act; else notes that it acts now (DEL's removal, GC's). */
export function enterGate(gate: CommandGate, step: string): void {
  const why = gate.stopReason();
  if (why !== undefined) throw new NotWantedError(step, 0, why);
  gate.acting();
}
