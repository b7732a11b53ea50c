// The CNI call: it forwards the command as it came to the node's announcer, the one executor, prints its answer and
// exits with its status. It parses only what it needs (stateDir, the wait its request may take, onUnavailable) and
// loads no FFI and no validation. It never runs the command itself: an announcer that cannot answer is reported by
// unavailable.ts, per command. One exchange is one connection: connect, write the request line with its deadline,
// wait for the answer until that deadline and no longer; the transport and the clock are injected.
import { BUILD_ID } from '../about';
import {
  cniEnv,
  decodeReply,
  encodeLine,
  MAX_FORWARDED_STDIN,
  MAX_REQUEST_LINE,
  parseObject,
  START_MS,
  STOP_MS,
  stateDirOf,
  WIRE_VERSION,
  waitMsOf,
  type ControlReply,
  type ControlRequest,
  type RequestBody,
  type WireReply,
} from '../protocol';
import { readyOutcome } from '../self-command';
import { ANNOUNCER_SOCKET } from '../state-files';
import type { CniIo } from '../cni/dispatch';
import type { StreamError } from '../sys/sys-error';
import { readText } from '../sys/stdio';
import { withSocketAddress } from '../sys/unix-socket';
import { connectUnix, type ConnectUnix, type Connection } from '../sys/unix-stream';
import type { Started } from './start';
import {
  StateDirError,
  stateDirReply,
  tooLargeReply,
  unavailableReply,
  type Unavailable,
  type UnavailableReply,
} from './unavailable';

/** How an exchange ended: the announcer's answer line (a CNI command's end, a control answer, a refusal), or none. */
export type Outcome =
  | WireReply
  /** connect(2) failed with this errno name (ENOENT, ECONNREFUSED, EAGAIN...): the request never went out. */
  | { unreachable: string }
  /** No answer by the request's deadline. */
  | { hung: true }
  /**
   * The connection was reset (ECONNRESET, EPIPE) before any answer: the announcer never read the request (the kernel
   * resets a connection whose bytes its server never read), so nothing of it ran.
   */
  | { reset: true }
  /** End of stream, another socket error or a line that is not the protocol's, before the end: it may have run. */
  | { closed: true };

/** The errnos of a connection reset before its request was read. */
const RESET_ERRNOS = ['ECONNRESET', 'EPIPE'];

/**
 * CLOCK_BOOTTIME in ms (the node's clock of shared times, see src/announce/context.ts), and a timer that `after` starts
 * and
 * its result cancels.
 */
export interface ShimClock {
  now(): number;
  after(ms: number, fire: () => void): () => void;
}

/**
 * The real clock without FFI: /proc/uptime's text (`uptime`: CLOCK_BOOTTIME in centiseconds, read once) carried on by
 * performance.now(). Bun's process.hrtime counts from the process's start, not CLOCK_MONOTONIC's
 * origin. The centiseconds are floored, so this clock runs up to 10 ms behind: a `deadline` from it
 * falls due early, never late, to an announcer that reads CLOCK_BOOTTIME.
 */
export function bootClock(uptime: () => string, elapsed: () => number = () => performance.now()): ShimClock {
  let origin: number | undefined;
  return {
    now: () => {
      origin ??= Math.round(Number(uptime().split(' ')[0]) * 100) * 10 - elapsed();
      return origin + elapsed();
    },
    after: (ms, fire) => {
      const timer = setTimeout(fire, ms);
      return () => clearTimeout(timer);
    },
  };
}

/**
 * Sends `body` to the announcer listening at `address`, waits for its answer until `waitMs` from now (connecting
 * included) and resolves with the outcome; never rejects.
 */
export function exchange(
  connect: ConnectUnix,
  clock: ShimClock,
  address: string,
  body: RequestBody,
  build: string,
  waitMs: number,
): Promise<Outcome> {
  return new Promise((resolve) => {
    let connection: Connection | undefined;
    let done = false;
    let buffered = '';
    const decoder = new TextDecoder();
    const deadline = clock.now() + waitMs;
    const finish = (outcome: Outcome): void => {
      if (done) return;
      done = true;
      cancelTimer();
      connection?.close();
      resolve(outcome);
    };
    // Time is up: a line that came meanwhile but was not read yet (this process was held back) is read first.
    const cancelTimer = clock.after(waitMs, () => setImmediate(() => finish({ hung: true })));
    const handlers = {
      data: (chunk: Uint8Array): void => {
        buffered += decoder.decode(chunk, { stream: true });
        const nl = buffered.indexOf('\n');
        if (nl >= 0) finish(decodeReply(buffered.slice(0, nl)) ?? { closed: true });
        else if (buffered.length > MAX_REQUEST_LINE) finish({ closed: true });
      },
      end: () => finish({ closed: true }),
      error: (err: StreamError) => finish(RESET_ERRNOS.includes(err.code) ? { reset: true } : { closed: true }),
    };
    connect(address, handlers).then(
      (c) => {
        connection = c;
        if (done) return c.close();
        c.write(encodeLine({ v: WIRE_VERSION, build, deadline, ...body }));
      },
      (err: unknown) => finish({ unreachable: (err as { code?: string }).code ?? 'EIO' }),
    );
  });
}

/** connect(2)'s errnos that say stateDir's path itself is unusable. */
const PATH_ERRNOS = ['ENAMETOOLONG', 'ENOTDIR', 'ELOOP'];

/** Between two connection attempts while an announcer starts. */
export const RETRY_MS = 5;

/** The process around the shim: dispatch's (stdin read to EOF, at most maxBytes + 1 bytes), and stderr. */
export type ShimIo = CniIo<Uint8Array> & { writeStderr(text: string): void };

/** What the shim runs on. */
export interface ShimDeps {
  /** One exchange with the announcer of stateDir (exchange, at its socket), waiting at most waitMs for the end. */
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

/**
 * What the call does after `outcome`: none listens (ENOENT, ECONNREFUSED) or one hands over: start (or find) the next
 * announcer and send again; a reset (the request never read) or a full backlog (EAGAIN: one listens, busy): send
 * again; anything else is the call's outcome: take it.
 */
export function nextStep(outcome: Outcome): 'take' | 'start' | 'again' {
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
  const failure = (err: unknown) => ({ failed: err instanceof Error ? err.message : String(err) });
  const ready = await until(started.ready.then(readyOutcome, failure), deps.clock, giveUpAt);
  // No word by the call's end (undefined): one last try tells.
  return typeof ready === 'object' ? `it could not be started: ${ready.failed}` : undefined;
}

/** Resolves after `ms`, by `clock`. */
function pause(clock: ShimClock, ms: number): Promise<undefined> {
  return new Promise((resolve) => clock.after(ms, () => resolve(undefined)));
}

/** What `settles` resolves with, or undefined when it has not by `deadline` (clock ms). */
function until<T>(settles: Promise<T>, clock: ShimClock, deadline: number): Promise<T | undefined> {
  return new Promise((resolve) => {
    const cancel = clock.after(Math.max(0, deadline - clock.now()), () => resolve(undefined));
    void settles.then((value) => {
      cancel();
      resolve(value);
    });
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
  if (stdin.length > MAX_FORWARDED_STDIN) return writeReply(io, tooLargeReply(command));
  let text: string;
  try {
    // A byte order mark before the JSON is dropped, as dispatch drops it (src/cni/decode.ts).
    text = new TextDecoder('utf-8', { fatal: true }).decode(stdin);
  } catch {
    return { invalid: stdin };
  }
  const config = parseObject(text);
  const stateDir = config && stateDirOf(config);
  if (config === undefined || stateDir === undefined) return { invalid: stdin };
  const waitMs = waitMsOf(command, config);
  const body: RequestBody = { cni: { env: cniEnv(io.env), stdin: text } };
  let outcome = await forward(deps, stateDir, body, waitMs);
  // The socket's path cannot be reached through stateDir at all: a stateDir problem, not a busy announcer.
  if (typeof outcome !== 'string' && 'unreachable' in outcome && PATH_ERRNOS.includes(outcome.unreachable))
    outcome = new StateDirError(`cannot use stateDir ${stateDir}: ${outcome.unreachable}`);
  if (outcome instanceof StateDirError) return writeReply(io, stateDirReply(command, config, outcome.message));
  if (typeof outcome !== 'string' && 'exit' in outcome) {
    io.writeStdout(outcome.stdout);
    return { exit: outcome.exit };
  }
  const why: Unavailable = {
    stateDir,
    reason: reasonOf(outcome, waitMs, `${stateDir}/${ANNOUNCER_SOCKET}`),
    pid: await deps.announcerPid(stateDir).catch(() => undefined),
    fate: fateOf(outcome),
  };
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

function writeReply(io: ShimIo, reply: UnavailableReply): ShimResult {
  if (reply.stdout !== undefined) io.writeStdout(reply.stdout);
  if (reply.stderr !== undefined) io.writeStderr(reply.stderr);
  return { exit: reply.exit };
}

/** How long a control request waits for its answer: it is answered at once; the wait covers a loop busy with a turn. */
export const CONTROL_WAIT_MS = 1000;

/**
 * The announcer's answer to `control`, or undefined when none came (absent, hung, closed, refused); it never starts
 * one. `exchange` defaults to this process's.
 */
export async function askAnnouncer(
  stateDir: string,
  control: ControlRequest,
  exchange?: ShimDeps['exchange'],
): Promise<ControlReply | undefined> {
  const send = exchange ?? (await realShimDeps()).exchange;
  const outcome = await send(stateDir, { control }, CONTROL_WAIT_MS);
  const reply = 'control' in outcome ? outcome.control : undefined;
  const ok = (reply as { ok?: unknown } | null | undefined)?.ok;
  return typeof ok === 'boolean' ? (reply as ControlReply) : undefined;
}

/** ShimDeps for this process, sending its build in every request. */
export async function realShimDeps(): Promise<ShimDeps> {
  const uptime = await readText('/proc/uptime');
  const clock = bootClock(() => uptime);
  const quiet = { data: () => undefined, end: () => undefined, error: () => undefined };
  const listening = async (stateDir: string): Promise<boolean> => {
    try {
      await withSocketAddress(stateDir, async (address) => (await connectUnix(address, quiet)).close());
      return true;
    } catch {
      return false;
    }
  };
  return {
    clock,
    exchange: async (stateDir, body, waitMs) => {
      try {
        return await withSocketAddress(stateDir, (address) =>
          exchange(connectUnix, clock, address, body, BUILD_ID, waitMs),
        );
      } catch (err) {
        // The O_PATH open of a long stateDir failed: as connect(2) would have.
        return { unreachable: (err as NodeJS.ErrnoException).code ?? 'EIO' };
      }
    },
    announcerPid: async (stateDir) => (await import('./replace-hung')).announcerPid(stateDir),
    replaceHung: async (stateDir) => (await import('./replace-hung')).replaceHung(stateDir),
    start: async (stateDir) => (await import('./start')).startHere(stateDir, listening),
  };
}
