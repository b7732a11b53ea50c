import type { PluginConfig } from '../cni/config';
import type { Logger } from '../log';
import type { Libc } from '../sys/libc';
import type { ProcessId } from '../sys/processes';
import type { Timers } from '../announce/timers';
import type { LockFile } from '../announce/attachment-lock';

/** What the commands need from the process, injected by main.ts (and by tests). */
export interface CommandDeps {
  /** libc through koffi, loaded on first use. */
  libc(): Libc;
  timers: Timers;
  /** A logger for one attachment (or for the network, when ids are absent). */
  logger(config: PluginConfig, ids: { containerId?: string | undefined; ifname?: string | undefined }): Logger;
  /** Starts the detached background tail on a state record that holds its job. */
  startTail(recordFile: string): ProcessId;
  /** Closes `fds` without making this process's exit wait for them (see sys/close-after-exit.ts). */
  closeAfterExit(fds: readonly number[]): void;
  /** Takes a lock file within a timeout (flock, see sys/file-lock.ts); undefined when it stays held. */
  lockFile: LockFile;
}

