import type { PluginConfig } from '../cni/config';
import type { Logger } from '../log';
import type { Libc } from '../sys/libc';
import type { FrameBudget } from '../announce/frame-budget';
import type { RateLimit } from '../announce/token-bucket';
import type { Request } from '../daemon/protocol';
import type { Asked } from '../daemon/client';
import type { Timers } from '../announce/timers';
import type { LockFile } from '../announce/attachment-lock';

/** What the commands need from the process, injected by main.ts (and by tests). */
export interface CommandDeps {
  /** libc through koffi, loaded on first use. */
  libc(): Libc;
  timers: Timers;
  /** A logger for one attachment (or for the network, when ids are absent). */
  logger(config: PluginConfig, ids: { containerId?: string | undefined; ifname?: string | undefined }): Logger;
  /** Asks the background announcer of `stateDir` (see src/daemon/client.ts), starting it when none answers with `start`, handing it copies of `fds`. */
  askDaemon(stateDir: string, request: Request, opts: { start: boolean; fds?: readonly number[] }): Promise<Asked>;
  /** The node-wide frame budget of `stateDir` for `limit` (unlimited without one). */
  frameBudget(stateDir: string, limit: RateLimit | undefined, log: Logger): FrameBudget;
  /** Closes `fds` without making this process's exit wait for them (see sys/close-after-exit.ts). */
  closeAfterExit(fds: readonly number[]): void;
  /** Takes a lock file within a timeout (flock, see sys/file-lock.ts); undefined when it stays held. */
  lockFile: LockFile;
}

