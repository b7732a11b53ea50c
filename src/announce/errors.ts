// The announce layer's failures, each with what it is about. Their messages
// are written for whoever reads the runtime's error; which CNI code each one
// gets is decided in one place, src/commands/errors.ts.
import { describeConflict, type AddressConflict } from './conflict-probe';

/** stateDir, or a record in it, cannot be used, or the attachment cannot be locked; `cause` carries any errno. */
export class StateError extends Error {
  override name = 'StateError';
}

/** Another command on the attachment kept its lock for `waitMs`: ADD changed nothing and may be tried again. */
export class AttachmentBusyError extends Error {
  override name = 'AttachmentBusyError';
  constructor(readonly waitMs: number) {
    super(`another command on this attachment still runs after ${waitMs} ms: try again later`);
  }
}

/** Pod interfaces that are not in the pod netns (`gone`: they left it while ADD waited). */
export class InterfaceMissingError extends Error {
  override name = 'InterfaceMissingError';
  constructor(
    readonly names: readonly string[],
    readonly netns: string,
    readonly gone = false,
  ) {
    super(
      `pod interface ${names.map((n) => `"${n}"`).join(', ')} ${gone ? 'disappeared from' : 'not found in'} ${netns}`,
    );
  }
}

/** conflictCheck fail: other hosts use addresses ADD was about to announce, so it announced nothing. */
export class AddressConflictError extends Error {
  override name = 'AddressConflictError';
  constructor(readonly conflicts: readonly AddressConflict[]) {
    super(
      `IPv4 address conflict: ${conflicts.map(describeConflict).join('; ')}: announcing nothing (conflictCheck: fail)`,
    );
  }
}

/**
 * A command may no longer act (its caller has gone or its deadline has passed, or the announcer stops it): what ADD
 * did is undone, and nothing more of it happens; `sent` frames went out before; `why` says which.
 */
export class NotWantedError extends Error {
  override name = 'NotWantedError';
  /** The usual `why`: the caller of an ADD or CHECK no longer waits. */
  static readonly CALLER_GONE = 'the caller no longer waits';
  constructor(
    readonly step: string,
    readonly sent = 0,
    readonly why = NotWantedError.CALLER_GONE,
  ) {
    super(`${why}: stopped before ${step}${sent > 0 ? ` (${sent} frames sent before)` : ''}`);
  }
}

/**
 * gatewayCheck require: a routed gateway did not answer within gatewayCheckMs (or could not be asked): ADD undid
 * what it did; `asked` names what was sent.
 */
export class GatewayUnansweredError extends Error {
  override name = 'GatewayUnansweredError';
  constructor(
    readonly unanswered: readonly { interface: string; gateway: string }[],
    readonly asked: string,
  ) {
    const silent = unanswered.map((g) => `${g.gateway} (${g.interface})`).join(', ');
    super(`gateway ${silent} did not answer: ${asked} (gatewayCheck: require)`);
  }
}
