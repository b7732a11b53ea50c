// The CNI call (issue 25): forward the command as it came to the node's announcer, the one
// executor, print its answer and exit with its status. It parses only what it needs (stateDir,
// the wait its request may take, onUnavailable) and loads no FFI and no validation. It never runs
// the command itself: an announcer that cannot answer by the request's deadline is reported by
// unavailable.ts, per command.
import { ErrorCode } from '../cni/errors';
import type { Outcome, ShimClock } from './exchange';
import { readyOutcome } from '../self-command';
import type { Started } from './start';
import { StateDirError, unavailableReply, type Unavailable } from './unavailable';
import { ANNOUNCER_SOCKET } from '../state-files';
import {
  cniEnv,
  MAX_FORWARDED_STDIN,
  parseObject,
  START_MS,
  STOP_MS,
  stateDirOf,
  waitMsOf,
  type RequestBody,
} from './wire';

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

/** What the call does after an outcome: take it, start (or find) an announcer and send again, or send again. */
export type NextStep = 'take' | 'start' | 'again';

/**
 * After `outcome`: none listens (ENOENT, ECONNREFUSED) or one hands over: start or find the next; a reset (the request
 * never read) or a full backlog (EAGAIN: one listens, busy): send again; anything else is the call's outcome.
 */
export function nextStep(outcome: Outcome): NextStep {
  if ('refused' in outcome) return outcome.refused === 'handover' ? 'start' : 'take';
  if ('reset' in outcome) return 'again';
  if (!('unreachable' in outcome)) return 'take';
  if (outcome.unreachable === 'EAGAIN') return 'again';
  return ['ENOENT', 'ECONNREFUSED'].includes(outcome.unreachable) ? 'start' : 'take';
}

/**
 * Sends `body` to stateDir's announcer until one takes it. A call passed on (no listener, a hand-over, a reset, a full
 * backlog) starts or finds the next announcer and sends again, for as long as the longer of START_MS and `waitMs`,
 * plus STOP_MS for an announcer that stops, from its first outcome: a slow start (qemu-user) or a stopping announcer
 * must not fail a call its own deadline would let wait. Each send waits `waitMs` for the end. A string: why no
 * announcer could be started, said at once.
 */
export async function forward(
  deps: ShimDeps,
  stateDir: string,
  body: RequestBody,
  waitMs: number,
): Promise<Outcome | string | StateDirError> {
  let outcome = await deps.exchange(stateDir, body, waitMs);
  const giveUpAt = deps.clock.now() + Math.max(START_MS, waitMs) + STOP_MS;
  for (;;) {
    const step = nextStep(outcome);
    if (step === 'take' || deps.clock.now() >= giveUpAt) return outcome;
    if (step === 'start') {
      const failed = await startOnce(deps, stateDir, giveUpAt);
      if (failed !== undefined) return failed;
    } else if ('unreachable' in outcome) await pause(deps.clock, RETRY_MS);
    outcome = await deps.exchange(stateDir, body, waitMs);
  }
}

/**
 * Starts stateDir's announcer unless another shim does or one listens; undefined once worth sending again, else why
 * none can start. The shim that spawned it waits for its ready line (until `giveUpAt`); another tries again after
 * RETRY_MS, and spawns one itself once the marker is gone (a start that failed).
 */
async function startOnce(
  deps: ShimDeps,
  stateDir: string,
  giveUpAt: number,
): Promise<string | StateDirError | undefined> {
  let started: Started;
  try {
    started = await deps.start(stateDir);
  } catch (err) {
    if (err instanceof StateDirError) return err;
    return `it could not be started: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (started === 'running') return undefined;
  if (started === 'starting') return pause(deps.clock, RETRY_MS);
  const line = await until(started.ready, deps.clock, giveUpAt);
  if (line === undefined) return undefined; // no word by the call's end: one last try tells
  const ready = typeof line === 'string' ? readyOutcome(line) : line;
  return typeof ready === 'object' ? `it could not be started: ${ready.failed}` : undefined;
}

/** Resolves after `ms`, by `clock`. */
function pause(clock: ShimClock, ms: number): Promise<undefined> {
  return new Promise((resolve) => clock.after(ms, () => resolve(undefined)));
}

/** Waits for `ready` until `deadline` (clock ms): its line, its rejection as a failure, or undefined if silent. */
function until(
  ready: Promise<string>,
  clock: ShimClock,
  deadline: number,
): Promise<string | { failed: string } | undefined> {
  return new Promise((resolve) => {
    const cancel = clock.after(Math.max(0, deadline - clock.now()), () => resolve(undefined));
    const heard = (said: string | { failed: string }): void => {
      cancel();
      resolve(said);
    };
    ready.then(heard, (err: unknown) => heard({ failed: err instanceof Error ? err.message : String(err) }));
  });
}

/** Why an outcome is no answer, for the failure's message. */
function reasonOf(outcome: Outcome | string, waitMs: number, socket: string): string {
  if (typeof outcome === 'string') return outcome;
  if ('unreachable' in outcome) return `connect to ${socket} failed (${outcome.unreachable})`;
  if ('refused' in outcome) return `it refused the request on ${socket} (${outcome.refused})`;
  if ('hung' in outcome) return `no answer within ${waitMs} ms on ${socket}`;
  if ('reset' in outcome) return `the connection on ${socket} was reset before the request was read`;
  return `it closed the connection on ${socket} before answering: the command may have run`;
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
    // A byte order mark before the JSON is dropped, as dispatch drops it (src/cni/decode.ts).
    text = new TextDecoder('utf-8', { fatal: true }).decode(stdin);
  } catch {
    return { invalid: stdin };
  }
  const stateDir = stateDirOf(text);
  if (stateDir === undefined) return { invalid: stdin };
  const config = parseObject(text)!;
  const waitMs = waitMsOf(command, config);
  const body: RequestBody = { cni: { env: cniEnv(io.env), stdin: text } };
  let outcome = await forward(deps, stateDir, body, waitMs);
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
  const why: Unavailable = {
    stateDir,
    reason: reasonOf(outcome, waitMs, socket),
    pid: undefined,
    fate: fateOf(outcome),
  };
  why.pid = await deps.announcerPid(stateDir).catch(() => undefined);
  // No answer by the deadline: the named recovery of a hung announcer this executable started.
  if (typeof outcome !== 'string' && 'hung' in outcome) why.reason += `; ${await deps.replaceHung(stateDir)}`;
  return writeReply(io, unavailableReply(command, config, why));
}

/** What became of a request no announcer answered: waiting in a hung one, perhaps run (the end came first), or not. */
function fateOf(outcome: Outcome | string): Unavailable['fate'] {
  if (typeof outcome === 'string') return 'not run';
  if ('hung' in outcome) return 'queued';
  return 'closed' in outcome ? 'unsure' : 'not run';
}

/** A stdin past the forward limit: refused naming its size, never run (DEL and GC: exit 0, logged). */
function tooLarge(io: ShimIo, command: string | undefined): ShimResult {
  const mib = MAX_FORWARDED_STDIN / (1024 * 1024);
  const msg = `stdin holds more than ${mib} MiB (${MAX_FORWARDED_STDIN} bytes), the most the announcer takes`;
  if (command === 'DEL' || command === 'GC') {
    io.writeStderr(`announcer: ${command} not run: ${msg}\n`);
    return { exit: 0 };
  }
  return writeReply(io, {
    exit: 1,
    stdout: `${JSON.stringify({ cniVersion: '1.1.0', code: ErrorCode.IoFailure, msg })}\n`,
  });
}

function writeReply(io: ShimIo, reply: { exit: number; stdout?: string; stderr?: string }): ShimResult {
  if (reply.stdout !== undefined) io.writeStdout(reply.stdout);
  if (reply.stderr !== undefined) io.writeStderr(reply.stderr);
  return { exit: reply.exit };
}
