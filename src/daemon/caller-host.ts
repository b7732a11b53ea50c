// A hosted command runs in its caller's view of the file system (sys/caller-view.ts): the seam between the control
// socket, which knows the peer, and the commands, which resolve every path they carry through CommandDeps.view.
import type { BackgroundJob } from '../announce/background-job';
import type { CommandDeps } from '../commands/deps';
import type { Logger } from '../log';
import { CniError, ErrorCode } from '../cni/errors';
import type { CniPlugin } from '../cni/dispatch';
import { CallerViewError, type CallerView } from '../sys/caller-view';
import type { CallerViews } from '../sys/caller-views';

/** The process that sent a CNI request: its pid (SO_PEERCRED, 0 when not visible) and whether it still waits. */
export interface Caller {
  pid: number;
  /** Whether its connection is still open: a pid read before it closed may name another process by now. */
  connected(): boolean;
}

/** The view to run `caller`'s command in (the announcer's own without a caller), or why there is none. */
export function viewOfCaller(views: CallerViews, caller: Caller | undefined): CallerView | CallerViewError {
  if (!caller) return views.mine;
  let view;
  try {
    view = views.ofPeer(caller.pid);
  } catch (err) {
    return err instanceof CallerViewError ? err : new CallerViewError(String(err), { cause: err });
  }
  return caller.connected()
    ? view
    : new CallerViewError(`the caller (pid ${caller.pid}) left before its view of the file system was opened`);
}

/**
 * `plugin` for a caller whose view could not be had: ADD and CHECK fail with code 100 naming why; DEL, GC and STATUS
 * run in the announcer's own view (DEL must not fail a chain).
 */
export function refusing(plugin: CniPlugin, why: CallerViewError): CniPlugin {
  const fail = async (): Promise<never> => {
    throw new CniError(ErrorCode.SystemCall, why.message, { cause: why });
  };
  return { ...plugin, add: fail, check: fail };
}

/**
 * `jobLog` writing each job's logFile as its caller saw it; in the announcer's own view when that cannot be had again
 * (where the job's skip is logged, as every record's line was before the caller's view was kept).
 */
export function jobLogInView(
  jobLog: (job: BackgroundJob) => Logger,
  views: Pick<CallerViews, 'forRecorded' | 'mine'>,
): (job: BackgroundJob) => Logger {
  return (job) => {
    if (job.logFile === undefined) return jobLog(job);
    let logFile: string | undefined;
    try {
      logFile = (views.forRecorded(job.caller) ?? views.mine).path(job.logFile, { followLast: false });
    } catch {
      logFile = undefined; // a symlink loop: logging must never break the rounds
    }
    return jobLog({ ...job, logFile });
  };
}

/** `logger` writing each config's logFile as `view` sees it (a symlink at its end is refused, as it is in place). */
export function loggerInView(logger: CommandDeps['logger'], view: CallerView): CommandDeps['logger'] {
  return (config, ids) => {
    let logFile: string | undefined;
    try {
      logFile = config.logFile === undefined ? undefined : view.path(config.logFile, { followLast: false });
    } catch {
      logFile = undefined; // a symlink loop: logging must never break the command
    }
    return logger({ ...config, logFile }, ids);
  };
}
