// The CNI commands as the announcer, their one executor, runs them: the
// dispatcher and the commands, hosted here. Waits go
// to the announcer's loop (LoopWaits), packet sockets are closed on another
// thread, and jobs go to the announcer's table of work in memory (JobHost).
import type { LockFile } from '../announce/attachment-lock';
import type { RecordMemory } from '../announce/record-memory';
import type { Timers } from '../announce/timers';
import type { CommandDeps } from '../commands/deps';
import { dispatch, type CniPlugin, type NetworkRequest } from '../cni/dispatch';
import type { PluginConfig } from '../cni/config';
import { commandLogger } from '../log';
import { announcerPlugin } from '../plugin';
import type { Libc } from '../sys/libc';
import { CallerViewError } from '../sys/caller-view';
import type { CallerViews } from '../sys/caller-views';
import { loggerInView, refusing, viewOfCaller, type Caller } from './caller-host';
import type { Gate } from './admission';
import type { LoopWaits } from './loop-waits';
import type { CommandHost } from './daemon-deps';

/** What hosting the commands needs from the announcer. */
export interface CniHostDeps {
  libc: Libc;
  /** The real clocks; sleeping goes to `waits`. */
  timers: Timers;
  /** The announcer's one frame budget (in memory), which its later rounds draw from too. */
  frameBudget: CommandDeps['frameBudget'];
  waits: LoopWaits;
  /** The announcer's table of work, as a command it took at `takenAt` (boot ms) sees it. */
  jobHost: CommandHost['jobHost'];
  /** The announcer's attachment locks (memory-locks.ts), shared with its rounds. */
  attachmentLock: LockFile;
  /** What the announcer wrote to each record (record-memory.ts), shared with its table. */
  written: RecordMemory;
  /** Closes a socket whose last close may wait for an RCU grace period, on another thread. */
  closeInBackground(fd: number): void;
  /** Hears each command's config, with its network's log (conflists' node options: node-option-notes.ts). */
  noteConfig: CommandHost['noteConfig'];
  /** The views of the file system of the processes that send commands. */
  views: CallerViews;
  /** The commands' loggers (default: commandLogger, to each config's logFile). */
  logger?: CommandDeps['logger'] | undefined;
}

/** What a command printed and its exit status. */
export interface CommandOutcome {
  exit: number;
  stdout: string;
}

/**
 * Runs one CNI command (its CNI_* variables and stdin, as they came) to its end, its paths resolved as `caller` sees
 * them (call it while the caller waits), acting only while its `gate` lets it (its waits end when the gate stops it);
 * never rejects.
 */
export type CniRunner = (
  env: Record<string, string>,
  stdin: string,
  gate: Gate,
  caller?: Caller,
) => Promise<CommandOutcome>;

/** The announcer's runner of CNI commands. */
export function cniRunner(deps: CniHostDeps): CniRunner {
  const real = deps.timers;
  const commands: Omit<CommandDeps, 'host' | 'view' | 'gate' | 'timers' | 'waits'> = {
    libc: () => deps.libc,
    lockFile: deps.attachmentLock,
    written: deps.written,
    logger: deps.logger ?? commandLogger,
    frameBudget: deps.frameBudget,
    release: (fds) => fds.forEach((fd) => deps.closeInBackground(fd)),
  };
  return async (env, stdin, gate, caller) => {
    // The command's own waits: they end, rejected, when the announcer stops it.
    const waits = { readable: (fds: readonly number[], ms: number) => deps.waits.readable(fds, ms, gate.signal) };
    const timers: Timers = {
      now: () => real.now(),
      bootMs: () => real.bootMs(),
      sleep: (ms) => deps.waits.sleep(ms, gate.signal),
    };
    // Each command tells the announcer when it was taken, with what it reports (the time to its round 1).
    const takenAt = real.bootMs();
    const host = deps.jobHost(takenAt);
    const seen = viewOfCaller(deps.views, caller);
    const view = seen instanceof CallerViewError ? deps.views.mine : seen;
    const logger = loggerInView(commands.logger, view);
    const hosted = announcerPlugin({ ...commands, timers, waits, host, view, logger, gate });
    const plugin = noting(seen instanceof CallerViewError ? refusing(hosted, seen) : hosted, (config) =>
      deps.noteConfig(config, logger(config, {})),
    );
    let stdout = '';
    const exit = await dispatch(
      { env, readStdin: async () => Buffer.from(stdin), writeStdout: (text) => void (stdout += text) },
      plugin,
    );
    return { exit, stdout };
  };
}

/** `plugin`, each command first showing its config to `note`. */
function noting(plugin: CniPlugin, note: (config: PluginConfig) => void): CniPlugin {
  const first =
    <R extends NetworkRequest, T>(run: (req: R) => Promise<T>) =>
    (req: R): Promise<T> => {
      note(req.config);
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
