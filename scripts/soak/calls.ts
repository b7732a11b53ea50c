// The runtime's side of the load: each CNI call of the announcer run as a runtime runs it (config on stdin, CNI_* in
// the environment), recorded with its start and exit time; a DEL tried again until the announcer has answered it, as
// kubelet does; and what a call's output says happened.
import { runCniCommand, type CniCall } from '../../test/integration/harness/cni';
import { BRIEF_MS, MARGIN_MS } from '../../src/shim/wire';
import type { CallCommand, CallRecord } from './model';
import { pause } from './time';

/** Longest a CNI call may run before the soak gives up on it (its own bounds are seconds). */
export const CALL_BOUND_MS = 40_000;
/** Between two tries of a DEL the announcer did not answer. */
const DEL_RETRY_MS = 300;

/** Where calls go: the installed plugin (it changes on an upgrade), and the network's stateDir and logFile. */
export interface CallTarget {
  plugin(): string;
  stateDir: string;
  logFile: string;
  /** The calls running now, by a key of their own: the chaos schedule times some faults to meet one. */
  inFlight: Map<number, { command: CallCommand; start: number }>;
}

let nextCall = 0;

/** One attachment as the runtime knows it: its ids, netns, network and the result it caches for CHECK and DEL. */
export interface Attachment {
  containerId: string;
  netns: string;
  network: { name: string; cniVersion: string };
  prevResult: unknown;
  options: Record<string, unknown>;
}

/** Runs the announcer for `command` on the attachment; never throws (a call that never returns is recorded so). */
export async function cniCall(
  target: CallTarget,
  att: Attachment,
  command: CallCommand,
  attempt = 1,
): Promise<CallRecord> {
  const config = {
    type: 'announcer',
    ...att.options,
    stateDir: target.stateDir,
    logFile: target.logFile,
    name: att.network.name,
    cniVersion: att.network.cniVersion,
    prevResult: att.prevResult,
  };
  const call: CniCall = { command, containerId: att.containerId, netns: att.netns, ifname: 'eth0' };
  call.timeoutMs = CALL_BOUND_MS;
  const start = Date.now();
  const base = { pod: att.containerId, command, attempt, start };
  const key = nextCall++;
  target.inFlight.set(key, { command, start });
  try {
    const out = await execRetrying(() => runCniCommand(target.plugin(), [], call, config));
    const rec: CallRecord = { ...base, end: Date.now(), code: out.code, stdout: out.stdout, stderr: out.stderr };
    if (out.json !== undefined) rec.json = out.json;
    return rec;
  } catch (err) {
    const lost = err instanceof Error ? err.message : String(err);
    return { ...base, end: Date.now(), code: -1, stdout: '', stderr: '', lost };
  } finally {
    target.inFlight.delete(key);
  }
}

/**
 * Runs `exec`, again (up to 5 times, 50 ms apart) when the executable could not be started for ETXTBSY: a process the
 * soak forked while it copied a build (an upgrade, a resident's file) held the copy's write fd until its own exec. A
 * runtime never races an installer that way on purpose; the soak's own copying is not what it tests.
 */
export async function execRetrying<T>(exec: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await exec();
    } catch (err) {
      if (i >= 5 || !/ETXTBSY/.test(String(err))) throw err;
      await pause(50);
    }
  }
}

/**
 * Whether the announcer answered this DEL: it exited 0 and the shim said nothing on stderr (a DEL the announcer left
 * queued or never got exits 0 too, with one `announcer: DEL …` line on stderr; the runtime tries it again).
 */
export function delServed(rec: CallRecord): boolean {
  return rec.code === 0 && !/^announcer: /m.test(rec.stderr);
}

/** The shim's words for a request the announcer did not answer (src/shim/unavailable.ts, shim.ts). */
const NO_ANSWER = /did not answer|no answer within|before (the )?answer|closed the connection/;

/**
 * Whether the call got no answer of the announcer's: it never returned, the shim reports that the announcer did not
 * answer (a reset, an EOF, its deadline), or a DEL it left queued or unsent.
 */
export function unanswered(r: CallRecord): boolean {
  if (r.lost !== undefined) return true;
  if (r.command === 'DEL') return !delServed(r);
  return r.code !== 0 && NO_ANSWER.test(String(r.json?.msg ?? r.stdout));
}

/**
 * How long the shim waits for the announcer's answer to the call (src/shim/wire.ts): ADD and CHECK addWaitMs +
 * MARGIN_MS (the soak's pods set no probe and no gatewayCheck require), DEL BRIEF_MS.
 */
export function deadlineOf(r: CallRecord, addWaitMs: number): number {
  return r.command === 'DEL' ? BRIEF_MS : addWaitMs + MARGIN_MS;
}

/** Whether the call waited out its deadline: the shim's own "no answer within N ms", or no exit at all. */
export function waitedOutDeadline(rec: CallRecord): boolean {
  return rec.lost !== undefined || /no answer within \d+ ms/.test(`${rec.stdout}${rec.stderr}${rec.json?.msg ?? ''}`);
}

/** What the call's output says, in one short line for reports. */
export function outcomeLine(rec: CallRecord): string {
  if (rec.lost !== undefined) return `never returned: ${rec.lost.slice(0, 200)}`;
  const msg = typeof rec.json?.msg === 'string' ? `code ${rec.json.code}: ${rec.json.msg}` : '';
  const said = [msg, rec.stderr.trim()].filter((s) => s !== '').join(' | ');
  return `exit ${rec.code}${said === '' ? '' : ` (${said.slice(0, 300)})`}`;
}

/**
 * DELs the attachment until the announcer answers, tries `DEL_RETRY_MS` apart, for at most `boundMs`; resolves with
 * every try (the last one served unless the bound ran out).
 */
export async function delUntilServed(
  target: CallTarget,
  att: Attachment,
  boundMs: number,
  signal: AbortSignal,
): Promise<CallRecord[]> {
  const tries: CallRecord[] = [];
  const until = Date.now() + boundMs;
  for (let attempt = 1; ; attempt++) {
    const rec = await cniCall(target, att, 'DEL', attempt);
    tries.push(rec);
    if (delServed(rec) || Date.now() >= until) return tries;
    // Aborted (Ctrl-C): one more try at most, then the cleanup goes on.
    if (signal.aborted && attempt >= 2) return tries;
    await pause(DEL_RETRY_MS);
  }
}
