// Where the failures of the layers below get their CNI error codes.
import {
  AddressConflictError,
  AttachmentBusyError,
  GatewayUnansweredError,
  InterfaceMissingError,
  NotWantedError,
  StateError,
} from '../announce/errors';
import { CniError, ErrorCode, isCniError, type ErrorCodeValue } from '../cni/errors';
import { isSysError } from '../sys/sys-error';
import type { Libc } from '../sys/libc';
import type { CallerView } from '../sys/caller-view';
import type { FileId } from '../sys/file-id';
import { checkNetnsPath } from '../sys/netns';

/** The code of each error of the announce layer; the message stays its own. */
const ANNOUNCE_CODES: readonly [new (...args: never[]) => Error, ErrorCodeValue][] = [
  [StateError, ErrorCode.StateFailure],
  [AttachmentBusyError, ErrorCode.TryAgainLater],
  [InterfaceMissingError, ErrorCode.InterfaceNotFound],
  [AddressConflictError, ErrorCode.AddressConflict],
  [GatewayUnansweredError, ErrorCode.GatewayUnanswered],
  [NotWantedError, ErrorCode.TryAgainLater],
];

/**
 * Passes CniErrors through; an announce-layer error gets its code, a SysError code 100 with its errno in the message.
 */
export function toCniError(err: unknown, what: string): unknown {
  if (isCniError(err)) return err;
  const known = ANNOUNCE_CODES.find(([type]) => err instanceof type);
  if (known) return new CniError(known[1], (err as Error).message, { cause: err });
  if (isSysError(err)) return new CniError(ErrorCode.SystemCall, `${what}: ${err.message}`, { cause: err });
  return err;
}

/**
 * Checks CNI_NETNS for ADD/CHECK: code 3 when it does not exist, 4 when it is no network namespace (a mount one, say)
 * or the plugin's own; `path` as the caller (`view`) sees it.
 */
export function requirePodNetns(libc: Libc, path: string, view: CallerView): FileId {
  let check;
  try {
    check = checkNetnsPath(libc, view.path(path));
  } catch (err) {
    throw new CniError(ErrorCode.InvalidEnvironment, `CNI_NETNS ${path}: ${(err as Error).message}`, { cause: err });
  }
  if (check.kind === 'ok') return check.id;
  if (check.kind === 'missing') throw new CniError(ErrorCode.UnknownContainer, `CNI_NETNS ${path} does not exist`);
  const why =
    check.kind === 'own'
      ? "is the plugin's own network namespace: refusing to announce pod addresses from the node"
      : `is not a network namespace: ${check.reason}`;
  throw new CniError(ErrorCode.InvalidEnvironment, `CNI_NETNS ${path} ${why}`);
}
