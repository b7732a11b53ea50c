// The real process's side of the injected dependencies: libc loaded on first
// use, and the clocks. Used by the verbs (verbs.ts).
import type { Timers } from '../announce/timers';
import { loadLibc, type Libc } from '../sys/libc';
import type { TcpSockets } from '../sys/tcp-socket';
import type { UnixSockets } from '../sys/unix-socket';
import { once } from '../once';
import { realTimers } from './real-timers';

/** What every part of the process is built from. */
export interface ProcessWiring {
  /** libc through koffi, loaded on first use. */
  libc(): Libc & UnixSockets & TcpSockets;
  timers: Timers;
}

/** The wiring of this process. */
export function processWiring(): ProcessWiring {
  const libc = once(loadLibc);
  return { libc, timers: realTimers(() => libc().bootTimeMs()) };
}
