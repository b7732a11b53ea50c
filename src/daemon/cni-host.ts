// The CNI commands as the announcer, their one executor, runs them: the
// dispatcher and the commands, hosted here. Waits go
// to the announcer's loop (LoopWaits), packet sockets are closed on another
// thread, and what a command would tell "the announcer" goes straight to it.
import { sharedFrameBudget, UNLIMITED } from '../announce/frame-budget';
import type { LockFile } from '../announce/attachment-lock';
import type { Timers } from '../announce/timers';
import type { CommandDeps } from '../commands/deps';
import { dispatch } from '../cni/dispatch';
import type { CniPlugin, NetworkRequest } from '../cni/requests';
import { commandLogger } from '../log';
import { announcerPlugin } from '../plugin';
import { acquireFileLock } from '../sys/file-lock';
import type { Libc } from '../sys/libc';
import type { LoopWaits } from './loop-waits';
import type { Reply, Request } from './protocol';
import type { DaemonSettings } from './settings';

/** What hosting the commands needs from the announcer. */
export interface CniHostDeps {
  libc: Libc;
  /** The real clocks; sleeping goes to `waits`. */
  timers: Timers;
  waits: LoopWaits;
  /**
   * The announcer's own answer to a control request (sync, count, cancel) of a command it took at `takenAt` (boot ms).
   */
  control(request: Request, takenAt: number): Reply;
  /** The announcer's attachment locks (memory-locks.ts), shared with its rounds. */
  attachmentLock: LockFile;
  /** Closes a socket whose last close may wait for an RCU grace period, on another thread. */
  closeInBackground(fd: number): void;
  /** Takes the announcer's own settings (idleExitMs, metricsFile) from the config of each command it runs. */
  useSettings(settings: DaemonSettings): void;
  /** The commands' loggers (default: commandLogger, to each config's logFile). */
  logger?: CommandDeps['logger'] | undefined;
}

/** What a command printed and its exit status. */
export interface CommandOutcome {
  exit: number;
  stdout: string;
}

/** Runs one CNI command (its CNI_* variables and stdin, as they came) to its end; never rejects. */
export type CniRunner = (
  env: Record<string, string>,
  stdin: string,
  stillWanted: () => boolean,
) => Promise<CommandOutcome>;

/** The announcer's runner of CNI commands. */
export function cniRunner(deps: CniHostDeps): CniRunner {
  const real = deps.timers;
  const timers: Timers = {
    now: () => real.now(),
    bootMs: () => real.bootMs(),
    sleep: (ms) => deps.waits.sleep(ms),
    setTimeout: (fn, ms) => real.setTimeout(fn, ms),
    clearTimeout: (handle) => real.clearTimeout(handle),
  };
  // The node-wide frame budget's file lock (the budget is shared through stateDir); attachments lock in memory.
  const budgetLock: LockFile = (path, timeoutMs) =>
    acquireFileLock(path, timeoutMs, { tryLock: deps.libc.tryLock, now: timers.now, sleep: timers.sleep });
  const commands: Omit<CommandDeps, 'askAnnouncer' | 'stillWanted'> = {
    libc: () => deps.libc,
    timers,
    waits: deps.waits,
    lockFile: deps.attachmentLock,
    logger: deps.logger ?? commandLogger,
    frameBudget: (stateDir, limit, log) =>
      limit ? sharedFrameBudget(stateDir, limit, budgetLock, log, 'first') : UNLIMITED,
    release: (fds) => fds.forEach((fd) => deps.closeInBackground(fd)),
  };
  return async (env, stdin, stillWanted) => {
    // Each command tells the announcer when it was taken, with what it reports (the time to its round 1).
    const takenAt = real.bootMs();
    const askAnnouncer: CommandDeps['askAnnouncer'] = async (_stateDir, request) => deps.control(request, takenAt);
    const plugin = withSettings(announcerPlugin({ ...commands, askAnnouncer, stillWanted }), deps.useSettings);
    let stdout = '';
    const exit = await dispatch(
      { env, readStdin: async () => Buffer.from(stdin), writeStdout: (text) => void (stdout += text) },
      plugin,
    );
    return { exit, stdout };
  };
}

/** `plugin`, each command first handing its config's announcer settings to `use`. */
function withSettings(plugin: CniPlugin, use: (settings: DaemonSettings) => void): CniPlugin {
  const first =
    <R extends NetworkRequest, T>(run: (req: R) => Promise<T>) =>
    (req: R): Promise<T> => {
      use({ idleExitMs: req.config.idleExitMs, metricsFile: req.config.metricsFile });
      return run(req);
    };
  return {
    add: first(plugin.add),
    del: first(plugin.del),
    check: first(plugin.check),
    status: first(plugin.status),
    gc: first(plugin.gc),
  };
}
