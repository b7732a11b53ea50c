// The real process's side of the injected dependencies: libc loaded on first
// use, the clocks and the node-wide frame budget (under its file lock). Shared by the
// CNI commands (plugin-deps.ts) and the verbs (verbs.ts).
import { realTimers, type Timers } from '../announce/timers';
import { sharedFrameBudget, UNLIMITED, type FrameBudget } from '../announce/frame-budget';
import type { LockFile } from '../announce/attachment-lock';
import type { RateLimit } from '../announce/token-bucket';
import type { Logger } from '../log';
import { acquireFileLock } from '../sys/file-lock';
import { loadLibc, type Libc } from '../sys/libc';
import type { TcpSockets } from '../sys/tcp-socket';
import type { UnixSockets } from '../sys/unix-socket';

/** What every part of the process is built from. */
export interface ProcessWiring {
  /** libc through koffi, loaded on first use. */
  libc(): Libc & UnixSockets & TcpSockets;
  timers: Timers;
  /** The node-wide frame budget of `stateDir` for `limit` (unlimited without one). */
  frameBudget(stateDir: string, limit: RateLimit | undefined, log: Logger, rounds?: 'first' | 'later'): FrameBudget;
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
  return {
    libc,
    timers,
    frameBudget: (stateDir, limit, log, rounds = 'first') =>
      limit ? sharedFrameBudget(stateDir, limit, lockFile, log, rounds) : UNLIMITED,
  };
}
