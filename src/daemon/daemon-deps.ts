// What the announcer needs from the process (DaemonDeps), and what it gives the
// CNI commands it hosts (CommandHost).
import type { LockFile } from '../announce/attachment-lock';
import type { RecordMemory } from '../announce/record-memory';
import type { JobHost } from '../announce/job-host';
import type { PluginConfig } from '../cni/config';
import type { NodeSettings } from '../cni/node-settings';
import type { Logger } from '../log';
import type { TryLock } from '../sys/libc';
import type { CniRunner } from './cni-host';
import type { ControlDeps } from './control';
import type { HttpDeps } from './http-server';
import type { JobDeps } from './jobs';
import type { LoopWaits } from './loop-waits';
import type { TakeOverDeps } from './take-over';

/** What the announcer needs from the process. */
export interface DaemonDeps
  extends Omit<JobDeps, 'closeInBackground' | 'lockFile' | 'written' | 'observeGatewayAnswer'>,
    ControlDeps,
    Pick<TakeOverDeps, 'resident' | 'askHandover' | 'waitForHolder'> {
  /**
   * close(2) on a worker thread (koffi's async queue, 256 calls at most); `done` hears the outcome. The announcer
   * bounds how many are in flight.
   */
  closeInBackground(fd: number, done: (error?: unknown) => void): void;
  tryLock: TryLock;
  /** The announcer's own log (job logs come from jobLog). */
  log: Logger;
  /** The node settings (its flags over the stateDir's announcer.conf), fixed for the announcer's life. */
  settings: NodeSettings;
  /** Writes the metrics file atomically. */
  writeMetrics(file: string, text: string): void;
  /** Why the metrics file can never be written (its directory missing, not a directory…); undefined if it may be. */
  metricsFileProblem(file: string): string | undefined;
  /** Where to serve /metrics and /healthz (--listen), and the calls to. */
  http?: Pick<HttpDeps, 'address' | 'sockets'>;
  /** This executable's build (src/build-id.ts). */
  build: string;
  /**
   * Stamps progress on the lock file open on `lockFd` (its mtime, to now): a caller may replace an announcer whose
   * stamp is old (src/shim/replace-hung.ts).
   */
  stampProgress(lockFd: number): void;
  /** Whether the file this announcer was started from has been replaced (an upgrade). */
  executableReplaced(): boolean;
  /** The runner of CNI commands, hosted on this announcer's loop (src/daemon/cni-host.ts). */
  commands(host: CommandHost): CniRunner;
  /** Says once that the announcer listens, to whoever started it (--ready-fd). */
  ready?(): void;
  /** Its threads in another netns than the main thread's (src/sys/netns.ts): one born in a pod's keeps it alive. */
  threadsInOtherNetns(): { tid: number; comm: string }[];
}

/** What the announcer gives the commands it runs: its loop's waits, its table of work, its closer. */
export interface CommandHost {
  waits: LoopWaits;
  /** The table of work as a command taken at `takenAt` (boot ms) sees it: ADD reports the time to its round 1. */
  jobHost(takenAt: number): JobHost;
  closeInBackground(fd: number): void;
  /** Hears each command's config (and its network's log): node options in a conflist are said once, not applied. */
  noteConfig(config: Pick<PluginConfig, 'name' | 'nodeOptions'>, networkLog: Pick<Logger, 'warn'>): void;
  /** The attachment locks, in memory: the rounds take the same ones. */
  attachmentLock: LockFile;
  /** What the announcer wrote to each record: its table writes them too. */
  written: RecordMemory;
}
