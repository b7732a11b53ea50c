// One request to the announcer and its answer (see wire.ts): connect, write the request line, wait
// for `ack` at most ACK_MS from the write, then take lines until the end with at most SILENCE_MS
// between two. The transport and the clock are injected; the socket is closed on every outcome.
import type { ConnectUnix, Connection } from '../sys/stream-connection';
import {
  ACK_MS,
  decodeReply,
  encodeRequest,
  MAX_REQUEST_LINE,
  SILENCE_MS,
  splitLines,
  WIRE_VERSION,
  type RequestBody,
} from './wire';

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
  /** No `ack` within ACK_MS, or silence for SILENCE_MS after it. */
  | { hung: true }
  /** End of stream, a socket error or a line that is not the protocol's, before the end. */
  | { dropped: true };

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
 * origin. The centiseconds are floored, so this clock runs up to 10 ms behind: an `ackBy` from it
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

/** What one reply line does: nothing yet (`ack`, `beat`), or the outcome. */
export function replyOutcome(line: string, acked: boolean): Outcome | 'ack' | 'beat' {
  const reply = decodeReply(line);
  if (reply === undefined) return { dropped: true };
  if ('refused' in reply) return acked ? { dropped: true } : { refused: reply.refused };
  // A control request is answered at once, without an `ack`.
  if ('control' in reply) return acked ? { dropped: true } : { control: reply.control };
  if ('ack' in reply) return acked ? { dropped: true } : 'ack';
  if (!acked) return { dropped: true }; // the protocol answers `ack` first
  if ('beat' in reply) return 'beat';
  return { end: { exit: reply.exit, stdout: reply.stdout } };
}

/** Sends `body` to the announcer listening at `address` and resolves with the outcome; never rejects. */
export function exchange(deps: ExchangeDeps, address: string, body: RequestBody, build: string): Promise<Outcome> {
  return new Promise((resolve) => {
    let connection: Connection | undefined;
    let cancelTimer = (): void => undefined;
    let done = false;
    let acked = false;
    let buffered = '';
    const decoder = new TextDecoder();
    const finish = (outcome: Outcome): void => {
      if (done) return;
      done = true;
      cancelTimer();
      connection?.close();
      resolve(outcome);
    };
    let waits = 0;
    const wait = (ms: number): void => {
      cancelTimer();
      const current = ++waits;
      // Time is up: a line that came meanwhile but was not read yet (this process was held back)
      // is read first, so that an `ack` sent in time is never taken for silence.
      cancelTimer = deps.clock.after(ms, () => setImmediate(() => current === waits && finish({ hung: true })));
    };
    const onLine = (line: string): void => {
      const next = replyOutcome(line, acked);
      if (next === 'ack') acked = true;
      if (next === 'ack' || next === 'beat') wait(SILENCE_MS);
      else finish(next);
    };
    const handlers = {
      data: (chunk: Uint8Array): void => {
        const { lines, rest } = splitLines(buffered + decoder.decode(chunk, { stream: true }));
        buffered = rest;
        for (const line of lines) if (!done) onLine(line);
        if (buffered.length > MAX_REQUEST_LINE) finish({ dropped: true });
      },
      end: () => finish({ dropped: true }),
      error: () => finish({ dropped: true }),
    };
    // A connect that neither succeeds nor fails counts against the ack's wait.
    wait(ACK_MS);
    deps.connect(address, handlers).then(
      (c) => {
        connection = c;
        if (done) return c.close();
        wait(ACK_MS);
        const ackBy = deps.clock.now() + ACK_MS;
        c.write(encodeRequest({ v: WIRE_VERSION, build, ackBy, ...body }));
      },
      (err: unknown) => finish({ unreachable: (err as { code?: string }).code ?? 'EIO' }),
    );
  });
}
