// The CNI call (issue 25): forward the command as it came to the node's announcer, the one
// executor, print its answer and exit with its status. It parses only what it needs (stateDir,
// the wait its request may take, onUnavailable) and loads no FFI and no validation. It never runs
// the command itself: an announcer that cannot answer by the request's deadline is reported by
// unavailable.ts, per command.
import type { Outcome, ShimClock } from './exchange';
import type { Started } from './start';
import { StateDirError, unavailableReply, type Unavailable } from './unavailable';
import { ANNOUNCER_SOCKET } from '../state-files';
import { cniEnv, MAX_FORWARDED_STDIN, parseObject, START_MS, stateDirOf, waitMsOf, type RequestBody } from './wire';

/** connect(2)'s errnos that say stateDir's path itself is unusable. */
const PATH_ERRNOS = ['ENAMETOOLONG', 'ENOTDIR', 'ELOOP'];

/** Between two connection attempts while an announcer starts. */
export const RETRY_MS = 5;

/** The process around the shim. */
export interface ShimIo {
  env: Readonly<Record<string, string | undefined>>;
  /** Reads stdin to EOF, at most maxBytes + 1 bytes (src/sys/stdio.ts). */
  readStdin(maxBytes: number): Promise<Uint8Array>;
  writeStdout(text: string): void;
  writeStderr(text: string): void;
}

/** What the shim runs on. */
export interface ShimDeps {
  /** One exchange with the announcer of stateDir (exchange.ts, at its socket), waiting at most waitMs for the end. */
  exchange(stateDir: string, body: RequestBody, waitMs: number): Promise<Outcome>;
  /** Starts the announcer of stateDir unless another shim does (start.ts); rejects when it cannot. */
  start(stateDir: string): Promise<Started>;
  /** The pid holding stateDir's announcer lock, for a failure's message; undefined when none or unknown. */
  announcerPid(stateDir: string): Promise<number | undefined>;
  /** Replaces stateDir's announcer when it is ours and hung (replace-hung.ts); what happened. Never rejects. */
  replaceHung(stateDir: string): Promise<string>;
  clock: ShimClock;
}

/** The shim's end: an exit status (its stdout printed), or stdin that is not a config it can forward. */
export type ShimResult = { exit: number } | { invalid: Uint8Array };

/** Whether an announcer (re)started could take the request: none listens, or an older build hands over. */
export function wantsStart(outcome: Outcome): boolean {
  if ('refused' in outcome) return outcome.refused === 'handover';
  // EAGAIN: a full backlog, so an announcer listens (busy): starting another would not help.
  return 'unreachable' in outcome && ['ENOENT', 'ECONNREFUSED'].includes(outcome.unreachable);
}

/**
 * Starts the announcer, then exchanges until it answers or the longer of START_MS and `waitMs` has passed (a slow
 * start, as under qemu-user, must not fail a call its own deadline would let wait): the shim that spawned it first
 * waits for its ready line, a shim that did not tries every RETRY_MS. A string: why it could not start.
 */
export async function startAndRetry(
  deps: ShimDeps,
  stateDir: string,
  body: RequestBody,
  waitMs: number,
): Promise<Outcome | string | StateDirError> {
  let started: Started;
  try {
    started = await deps.start(stateDir);
  } catch (err) {
    if (err instanceof StateDirError) return err;
    return `it could not be started: ${err instanceof Error ? err.message : String(err)}`;
  }
  const deadline = deps.clock.now() + Math.max(START_MS, waitMs);
  const failed = typeof started === 'string' ? undefined : await until(started.ready, deps.clock, deadline);
  if (failed !== undefined) return `it could not be started: ${failed}`;
  for (;;) {
    const outcome = await deps.exchange(stateDir, body, waitMs);
    if (!wantsStart(outcome) || deps.clock.now() >= deadline) return outcome;
    await new Promise<void>((resolve) => deps.clock.after(RETRY_MS, resolve));
  }
}

/** Waits for `ready` until `deadline` (clock ms): the error's message if it rejects first, else undefined. */
function until(ready: Promise<void>, clock: ShimClock, deadline: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const cancel = clock.after(Math.max(0, deadline - clock.now()), () => resolve(undefined));
    const heard = (failure?: string): void => {
      cancel();
      resolve(failure);
    };
    ready.then(
      () => heard(),
      (err: unknown) => heard(err instanceof Error ? err.message : String(err)),
    );
  });
}

/** Why an outcome is no answer, for the failure's message. */
function reasonOf(outcome: Outcome | string, waitMs: number, socket: string): string {
  if (typeof outcome === 'string') return outcome;
  if ('unreachable' in outcome) return `connect to ${socket} failed (${outcome.unreachable})`;
  if ('refused' in outcome) return `it refused the request on ${socket} (${outcome.refused})`;
  if ('hung' in outcome) return `no answer within ${waitMs} ms on ${socket}`;
  return `the connection on ${socket} ended before the answer`;
}

/** Forwards the CNI command of `io` to the announcer (see the top of this file). */
export async function runShim(io: ShimIo, deps: ShimDeps): Promise<ShimResult> {
  const command = io.env.CNI_COMMAND;
  let stdin: Uint8Array;
  try {
    stdin = await io.readStdin(MAX_FORWARDED_STDIN);
  } catch {
    return { invalid: new Uint8Array() }; // dispatch reads nothing either: code 6, an empty config
  }
  if (stdin.length > MAX_FORWARDED_STDIN) return tooLarge(io, command);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(stdin);
  } catch {
    return { invalid: stdin };
  }
  const stateDir = stateDirOf(text);
  if (stateDir === undefined) return { invalid: stdin };
  const config = parseObject(text)!;
  const waitMs = waitMsOf(command, config);
  const body: RequestBody = { cni: { env: cniEnv(io.env), stdin: text } };
  let outcome: Outcome | string | StateDirError = await deps.exchange(stateDir, body, waitMs);
  if (wantsStart(outcome)) outcome = await startAndRetry(deps, stateDir, body, waitMs);
  // The socket's path cannot be reached through stateDir at all: a stateDir problem, not a busy announcer.
  if (typeof outcome !== 'string' && 'unreachable' in outcome && PATH_ERRNOS.includes(outcome.unreachable))
    outcome = new StateDirError(`cannot use stateDir ${stateDir}: ${outcome.unreachable}`);
  if (outcome instanceof StateDirError) {
    const why = { stateDir, reason: outcome.message, pid: undefined, stateDirProblem: outcome.message };
    return writeReply(io, unavailableReply(command, config, why));
  }
  if (typeof outcome !== 'string' && 'end' in outcome) {
    io.writeStdout(outcome.end.stdout);
    return { exit: outcome.end.exit };
  }
  const socket = `${stateDir}/${ANNOUNCER_SOCKET}`;
  const why: Unavailable = { stateDir, reason: reasonOf(outcome, waitMs, socket), pid: undefined };
  why.pid = await deps.announcerPid(stateDir).catch(() => undefined);
  // No answer by the deadline: the named recovery of a hung announcer this executable started.
  if (typeof outcome !== 'string' && 'hung' in outcome) why.reason += `; ${await deps.replaceHung(stateDir)}`;
  return writeReply(io, unavailableReply(command, config, why));
}

/** A stdin past the forward limit: refused naming its size, never run (DEL and GC: exit 0, logged). */
function tooLarge(io: ShimIo, command: string | undefined): ShimResult {
  const mib = MAX_FORWARDED_STDIN / (1024 * 1024);
  const msg = `stdin holds more than ${mib} MiB (${MAX_FORWARDED_STDIN} bytes), the most the announcer takes`;
  if (command === 'DEL' || command === 'GC') {
    io.writeStderr(`announcer: ${command} not run: ${msg}\n`);
    return { exit: 0 };
  }
  return writeReply(io, { exit: 1, stdout: `${JSON.stringify({ cniVersion: '1.1.0', code: 5, msg })}\n` });
}

function writeReply(io: ShimIo, reply: { exit: number; stdout?: string; stderr?: string }): ShimResult {
  if (reply.stdout !== undefined) io.writeStdout(reply.stdout);
  if (reply.stderr !== undefined) io.writeStderr(reply.stderr);
  return { exit: reply.exit };
}
