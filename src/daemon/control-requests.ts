// The announcer's answers to control requests: `status` (what it is doing) and
// `handover` (a resident announcer starts and takes over from this one).
import { type DaemonStatus, RESIDENT_REFUSAL, type Reply, type Request } from './protocol';

/** What answering needs from the announcer. */
export interface ControlRequestDeps {
  /** Whether this is the DaemonSet's announcer, which never hands over to another resident one. */
  resident: boolean;
  status(): DaemonStatus;
  /** Stops serving, and hands over once the running commands end. */
  handOver(why: string): void;
  /** Counts and logs a failure. */
  failed(what: string, error: unknown, fields: Record<string, unknown>): void;
}

/** The answer to `request`; a throw is counted, logged and answered as an internal error. */
export function answerControl(deps: ControlRequestDeps, request: Request): Reply {
  try {
    if (request.op === 'status') return { ok: true, status: deps.status() };
    if (deps.resident) return { ok: false, error: RESIDENT_REFUSAL };
    deps.handOver('a resident announcer starts: handing over to it');
    return { ok: true };
  } catch (err) {
    deps.failed('control request failed', err, { op: request.op });
    return { ok: false, error: 'internal error' };
  }
}
