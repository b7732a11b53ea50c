// Pure: what a CNI call returns when the node's announcer cannot answer it (absent and unable to
// start, hung past the request's deadline, gone mid-request, refusing). ADD and CHECK fail with
// code 11 naming the announcer's pid and what was waited for, unless the network says
// `onUnavailable: skip` (ADD then returns prevResult unannounced, CHECK and STATUS exit 0, each
// with a WARN). DEL and GC never fail for it: the spec asks DEL to succeed as far as it can, and
// libcni stops a chain at its first failing DEL. STATUS says code 50 while an ADD would fail. A stdin too large to
// forward is refused here too.
import { isJsonObject } from '../cni/decode';
import { ErrorCode } from '../cni/errors';
import { skipRefusal } from '../cni/option-bounds';
import { MAX_FORWARDED_STDIN } from '../protocol';

/** Why the announcer did not answer: its stateDir, what happened, and the pid holding its lock (if known). */
export interface Unavailable {
  stateDir: string;
  reason: string;
  pid: number | undefined;
  /** What became of the request: waiting in a hung announcer, perhaps run (the connection ended first), not run. */
  fate?: 'queued' | 'unsure' | 'not run';
}

/** How a DEL or GC that exits 0 without an answer says what became of it, by Unavailable's fate. */
const FATES = { queued: 'left queued or not run', unsure: 'may not have run', 'not run': 'not run' } as const;

/** stateDir cannot be prepared for an announcer: the message says what to fix (stateDirProblem, sys/private-dir.ts). */
export class StateDirError extends Error {
  override name = 'StateDirError';
}

/** What the shim prints and returns. */
export interface UnavailableReply {
  exit: number;
  stdout?: string;
  stderr?: string;
}

/** The reply of `command` on `config` (a JSON object) when the announcer did not answer. */
export function unavailableReply(
  command: string | undefined,
  config: Record<string, unknown>,
  why: Unavailable,
): UnavailableReply {
  const pid = why.pid === undefined ? 'no pid holds its lock' : `pid ${why.pid}`;
  const text = `the announcer of stateDir ${why.stateDir} (${pid}) did not answer: ${why.reason}`;
  if (command === 'DEL' || command === 'GC') return said(`${command} ${FATES[why.fate ?? 'queued']}: ${text}`);
  const skip = config.onUnavailable === 'skip' && skipRefusal(config) === undefined;
  if (skip && (command === 'ADD' || command === 'CHECK' || command === 'STATUS')) {
    const warned = said(`WARN ${command} not announced (onUnavailable: skip): ${text}`);
    if (command !== 'ADD') return warned;
    const prevResult = isJsonObject(config.prevResult) ? config.prevResult : {};
    return { ...warned, stdout: `${JSON.stringify({ ...prevResult, cniVersion: versionOf(config) })}\n` };
  }
  return failed(config, command === 'STATUS' ? ErrorCode.NotAvailable : ErrorCode.TryAgainLater, text);
}

/**
 * The reply of `command` on `config` when stateDir itself cannot be used (unsafe, not a directory…): ADD, CHECK, GC
 * code 105, STATUS 50, saying what to fix (`problem`); DEL exits 0, saying so.
 */
export function stateDirReply(
  command: string | undefined,
  config: Record<string, unknown>,
  problem: string,
): UnavailableReply {
  if (command === 'DEL') return said(`${command} did nothing: ${problem}`);
  return failed(config, command === 'STATUS' ? ErrorCode.NotAvailable : ErrorCode.StateFailure, problem);
}

/** The reply to a stdin past MAX_FORWARDED_STDIN: refused naming its size, never run (DEL and GC: exit 0, said). */
export function tooLargeReply(command: string | undefined): UnavailableReply {
  const mib = MAX_FORWARDED_STDIN / (1024 * 1024);
  const msg = `stdin holds more than ${mib} MiB (${MAX_FORWARDED_STDIN} bytes), the most the announcer takes`;
  if (command === 'DEL' || command === 'GC') return said(`${command} not run: ${msg}`);
  return failed({}, ErrorCode.IoFailure, msg);
}

/** Exit 0, `what` said on stderr. */
const said = (what: string): UnavailableReply => ({ exit: 0, stderr: `announcer: ${what}\n` });

/** Exit 1, the CNI error `code` with `msg` printed in config's cniVersion (1.1.0 without one). */
function failed(config: Record<string, unknown>, code: number, msg: string): UnavailableReply {
  const cniVersion = versionOf(config);
  return { exit: 1, stdout: `${JSON.stringify({ cniVersion, code, msg })}\n` };
}

function versionOf(config: Record<string, unknown>): string {
  return typeof config.cniVersion === 'string' ? config.cniVersion : '1.1.0';
}
