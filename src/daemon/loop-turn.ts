// One turn of the announcer's loop: one wait in its one poll(2), for sockets or
// the next due time, then whatever is due. Every wait of the announcer
// (readiness, probe windows, the budget, a back-off) is an fd or a deadline
// here, so a turn never blocks elsewhere.
import type { Libc } from '../sys/libc';
import type { Jobs } from './jobs';
import type { LoopWaits } from './loop-waits';
import type { MetricsFile } from './metrics-file';

/** A socket the loop serves: the control socket, the HTTP endpoint. */
export interface Served {
  fds(): number[];
  writeFds(): number[];
  /** When it next needs a turn (boot ms). */
  wakeAt(): number;
  serve(readable: ReadonlySet<number>, writable: ReadonlySet<number>): void;
}

/** What a turn works on. */
export interface TurnParts {
  libc: Pick<Libc, 'pollInOut'>;
  /** Monotonic ms, and boot ms (the jobs' clock). */
  now(): number;
  bootMs(): number;
  served: readonly Served[];
  jobs: Pick<Jobs, 'eventFds' | 'wakeAt' | 'runDue'>;
  waits: Pick<LoopWaits, 'fds' | 'msLeft' | 'settle'>;
  metricsFile: Pick<MetricsFile, 'flush'>;
  /**
   * Runs after the poll, once events that came meanwhile (a signal) have been heard, before what the poll found is
   * served: a stop asked then takes what waits on the socket in, and passes it on.
   */
  afterPoll(): void;
}

/**
 * Runs one turn at `now` (boot ms); until `pausedUntil` (monotonic ms, after a turn that threw) it only waits, reading
 * nothing: a throw that repeats must not spin.
 */
export async function turn(parts: TurnParts, now: number, pausedUntil: number): Promise<void> {
  const { served, jobs, waits } = parts;
  const pause = pausedUntil - parts.now();
  if (pause > 0) {
    parts.libc.pollInOut([], [], pause);
    return;
  }
  const reading = [...served.flatMap((s) => s.fds()), ...jobs.eventFds(), ...waits.fds()];
  const dueIn = Math.min(jobs.wakeAt(now), ...served.map((s) => s.wakeAt())) - now;
  const { readable, writable } = parts.libc.pollInOut(
    reading,
    served.flatMap((s) => s.writeFds()),
    Math.max(0, Math.min(dueIn, waits.msLeft())),
  );
  // A signal that came during the poll is heard here, before the requests the poll found are taken.
  await new Promise<void>((resolve) => setImmediate(resolve));
  parts.afterPoll();
  for (const s of served) s.serve(readable, writable);
  waits.settle(readable);
  await jobs.runDue(parts.bootMs(), readable);
  await parts.metricsFile.flush(false);
  // Let the commands whose waits settled run on, and completions from other threads (background closes).
  await new Promise<void>((resolve) => setImmediate(resolve));
}
