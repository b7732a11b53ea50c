// One request to the announcer and its answer (see wire.ts): connect, write the request line with
// its deadline, then wait for the end until that deadline and no longer. The transport and the
// clock are injected; the socket is closed on every outcome.
import type { ConnectUnix, Connection, StreamError } from '../sys/stream-connection';
import { decodeReply, encodeRequest, MAX_REQUEST_LINE, splitLines, WIRE_VERSION, type RequestBody } from './wire';

/** How an exchange ended. */
export type Outcome =
  /** A CNI command's end, as the announcer ran it. */
  | { end: { exit: number; stdout: string } }
  /** A control operation's answer. */
  | { control: unknown }
  /** connect(2) failed with this errno name (ENOENT, ECONNREFUSED, EAGAIN...): the request never went out. */
  | { unreachable: string }
  /** The announcer did not take the request, for this reason (`handover`: start the new build). */
  | { refused: string }
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
 * CLOCK_BOOTTIME in ms (the node's clock of shared times, see announce/timers.ts), and a timer that `after` starts and
 * its result cancels.
 */
export interface ShimClock {
  now(): number;
  after(ms: number, fire: () => void): () => void;
}

/** What an exchange runs on. */
export interface ExchangeDeps {
  connect: ConnectUnix;
  clock: ShimClock;
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

/** What one reply line does: nothing (`ack`, `beat`: an older announcer's, ignored), or the outcome. */
export function replyOutcome(line: string): Outcome | 'ignored' {
  const reply = decodeReply(line);
  if (reply === undefined) return { closed: true };
  if ('refused' in reply) return { refused: reply.refused };
  if ('control' in reply) return { control: reply.control };
  if ('ack' in reply || 'beat' in reply) return 'ignored';
  return { end: { exit: reply.exit, stdout: reply.stdout } };
}

/**
 * Sends `body` to the announcer listening at `address`, waits for its answer until `waitMs` from now (connecting
 * included) and resolves with the outcome; never rejects.
 */
export function exchange(
  deps: ExchangeDeps,
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
    const deadline = deps.clock.now() + waitMs;
    const finish = (outcome: Outcome): void => {
      if (done) return;
      done = true;
      cancelTimer();
      connection?.close();
      resolve(outcome);
    };
    // Time is up: a line that came meanwhile but was not read yet (this process was held back) is read first.
    const cancelTimer = deps.clock.after(waitMs, () => setImmediate(() => finish({ hung: true })));
    const handlers = {
      data: (chunk: Uint8Array): void => {
        const { lines, rest } = splitLines(buffered + decoder.decode(chunk, { stream: true }));
        buffered = rest;
        for (const line of lines) {
          const next = done ? 'ignored' : replyOutcome(line);
          if (next !== 'ignored') finish(next);
        }
        if (buffered.length > MAX_REQUEST_LINE) finish({ closed: true });
      },
      end: () => finish({ closed: true }),
      error: (err: StreamError) => finish(RESET_ERRNOS.includes(err.code) ? { reset: true } : { closed: true }),
    };
    deps.connect(address, handlers).then(
      (c) => {
        connection = c;
        if (done) return c.close();
        // ackBy = deadline: an older announcer takes the request while this shim still waits, and acks it.
        c.write(encodeRequest({ v: WIRE_VERSION, build, ackBy: deadline, deadline, ...body }));
      },
      (err: unknown) => finish({ unreachable: (err as { code?: string }).code ?? 'EIO' }),
    );
  });
}
