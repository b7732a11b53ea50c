// Whether an ADD's caller still waits for it: asked before each side effect (a MAC, the probe,
// round 1, the record). The announcer answers from the request's connection and deadline.
import type { Logger } from '../log';
import { NotWantedError } from './errors';

/** Throws NotWantedError (logged, with the frames sent before) once the caller no longer waits. */
export function requireWanted(deps: { stillWanted(): boolean; log: Logger }, step: string, sent = 0): void {
  if (deps.stillWanted()) return;
  deps.log.warn('the caller no longer waits: ADD stops and undoes what it did', {
    before: step,
    framesSentBefore: sent,
  });
  throw new NotWantedError(step, sent);
}
