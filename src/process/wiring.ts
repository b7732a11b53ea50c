// The real process's side of the injected dependencies: libc loaded on first
// use, the clocks, file locks and the process's one frame budget (the announcer's is the node's). Shared by the
// CNI commands (plugin-deps.ts) and the verbs (verbs.ts).
import type { Timers } from '../announce/timers';
import { NodeFrameBudget, type FrameBudget, type Rounds } from '../announce/frame-budget';
import type { LockFile } from '../announce/attachment-lock';
import type { RateLimit } from '../announce/token-bucket';
import type { Logger } from '../log';
import { acquireFileLock } from '../sys/file-lock';
import { loadLibc, type Libc } from '../sys/libc';
import type { TcpSockets } from '../sys/tcp-socket';
import type { UnixSockets } from '../sys/unix-socket';
import { realTimers } from './real-timers';

/** What every part of the process is built from. */
export interface ProcessWiring {
  /** libc through koffi, loaded on first use. */
  libc(): Libc & UnixSockets & TcpSockets;
  timers: Timers;
  lockFile: LockFile;
  /** This process's frame budget for `limit` (unlimited without one): one bucket in memory (frame-budget.ts). */
  frameBudget(stateDir: string, limit: RateLimit | undefined, log: Logger, rounds?: Rounds): FrameBudget;
}

function once<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}

/** The wiring of this process. */
export function processWiring(): ProcessWiring {
  const libc = once(loadLibc);
  const timers = realTimers(() => libc().bootTimeMs());
  const lockFile: LockFile = (path, timeoutMs) =>
    acquireFileLock(path, timeoutMs, { tryLock: libc().tryLock, now: timers.now, sleep: timers.sleep });
  // Each config's rateLimit is passed at each take until node settings carry the node's one.
  const frames = new NodeFrameBudget(() => undefined);
  return {
    libc,
    timers,
    lockFile,
    frameBudget: (_stateDir, limit, _log, rounds = 'first') => frames.budget(rounds, limit),
  };
}
