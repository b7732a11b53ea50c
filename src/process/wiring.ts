// The real process's side of the injected dependencies: libc loaded on first
// use, the clocks and file locks. Shared by the
// CNI commands (plugin-deps.ts) and the verbs (verbs.ts).
import type { Timers } from '../announce/timers';
import type { LockFile } from '../announce/attachment-lock';
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
    lockFile,
  };
}
