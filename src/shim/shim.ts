// The CNI call's fast path (issue 18): forward the command as it came to the node's announcer,
// print its answer and exit with its status. It parses only what it needs (stateDir) and loads
// no FFI and no validation. Whatever stops it (no announcer that can be started, a hung or
// dropped one, an odd stdin) ends in a fallback: the caller runs the command in-process, on the
// same stdin bytes.
import type { Outcome, ShimClock } from './exchange';
import { cniEnv, MAX_FORWARDED_STDIN, START_MS, stateDirOf, type RequestBody } from './wire';

/** Between two connection attempts while an announcer starts. */
export const RETRY_MS = 5;

/** The process around the shim. */
export interface ShimIo {
  env: Readonly<Record<string, string | undefined>>;
  /** Reads stdin to EOF, at most maxBytes + 1 bytes (src/sys/stdio.ts). */
  readStdin(maxBytes: number): Promise<Uint8Array>;
  writeStdout(text: string): void;
}

/** What the shim runs on. */
export interface ShimDeps {
  /** One exchange with the announcer of stateDir (exchange.ts, at its socket). */
  exchange(stateDir: string, body: RequestBody): Promise<Outcome>;
  /** Starts the announcer of stateDir unless another shim does (start.ts); rejects when it cannot. */
  start(stateDir: string): Promise<unknown>;
  clock: ShimClock;
}

/**
 * The shim's end: the announcer's exit status (its stdout printed), or a reason to run in-process, with the stdin read
 * so far (none if reading failed).
 */
export type ShimResult = { exit: number } | { fallback: string; stdin: Uint8Array | undefined };

/** Whether an announcer (re)started could take the request: none listens, or an older build hands over. */
export function wantsStart(outcome: Outcome): boolean {
  if ('refused' in outcome) return outcome.refused === 'handover';
  // EAGAIN: a full backlog, so an announcer listens (busy): starting another would not help.
  return 'unreachable' in outcome && ['ENOENT', 'ECONNREFUSED'].includes(outcome.unreachable);
}

/**
 * Starts the announcer, then exchanges every RETRY_MS until it answers or `waitMs` has passed; a string: why it could
 * not start.
 */
export async function startAndRetry(
  deps: ShimDeps,
  stateDir: string,
  body: RequestBody,
  waitMs: number = START_MS,
): Promise<Outcome | string> {
  try {
    await deps.start(stateDir);
  } catch (err) {
    return `start: ${err instanceof Error ? err.message : String(err)}`;
  }
  const deadline = deps.clock.now() + waitMs;
  for (;;) {
    const outcome = await deps.exchange(stateDir, body);
    if (!wantsStart(outcome) || deps.clock.now() >= deadline) return outcome;
    await new Promise<void>((resolve) => deps.clock.after(RETRY_MS, resolve));
  }
}

/** Why an outcome sends the command in-process. */
function reasonOf(outcome: Outcome): string {
  if ('unreachable' in outcome) return `unreachable (${outcome.unreachable})`;
  if ('refused' in outcome) return `refused (${outcome.refused})`;
  if ('hung' in outcome) return 'hung';
  if ('dropped' in outcome) return 'dropped';
  return 'not a CNI answer';
}

/** Forwards the CNI command of `io` to the announcer (see the top of this file). */
export async function runShim(io: ShimIo, deps: ShimDeps): Promise<ShimResult> {
  let stdin: Uint8Array;
  try {
    stdin = await io.readStdin(MAX_FORWARDED_STDIN);
  } catch {
    return { fallback: 'stdin unread', stdin: undefined };
  }
  if (stdin.length > MAX_FORWARDED_STDIN) return { fallback: 'stdin too large to forward', stdin };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(stdin);
  } catch {
    return { fallback: 'stdin is not UTF-8', stdin };
  }
  const stateDir = stateDirOf(text);
  if (stateDir === undefined) return { fallback: 'no stateDir in the config', stdin };
  const body: RequestBody = { cni: { env: cniEnv(io.env), stdin: text } };
  let outcome: Outcome | string = await deps.exchange(stateDir, body);
  if (wantsStart(outcome)) outcome = await startAndRetry(deps, stateDir, body);
  if (typeof outcome === 'string') return { fallback: outcome, stdin };
  if (!('end' in outcome)) return { fallback: reasonOf(outcome), stdin };
  io.writeStdout(outcome.end.stdout);
  return { exit: outcome.end.exit };
}
