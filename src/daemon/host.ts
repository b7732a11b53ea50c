// The CNI commands as the announcer, their one executor, runs them: dispatch and the commands, each in its caller's
// view of the file system (sys/caller-view.ts), with a context of its own (announce/context.ts) made from the
// announcer's parts: its waits go to the announcer's loop (and end when its gate stops it), its slow sockets are closed
// on another thread, its jobs go to the announcer's table of work in memory, and the attachment locks it takes are the
// ones the table's rounds take too.
import type { BackgroundJob } from '../announce/background-job';
import type { AttachmentLocks, CommandContext, HeldLock } from '../announce/context';
import { inView } from '../announce/session';
import type { PluginConfig } from '../cni/config';
import { dispatch, type CniPlugin } from '../cni/dispatch';
import { CniError, ErrorCode } from '../cni/errors';
import { whereToSet } from '../cni/node-settings';
import type { NodeOptionKey } from '../cni/option-schema';
import type { Logger } from '../log';
import type { Libc } from '../sys/libc';
import { CallerViewError, type CallerView, type CallerViews } from '../sys/caller-view';
import { attempt } from '../sys/sys-error';
import type { Gate } from './admission';
import type { Announcer } from './daemon';

/** The process that sent a CNI request: its pid (SO_PEERCRED, 0 when not visible) and whether it still waits. */
export interface Caller {
  pid: number;
  /** Whether its connection is still open: a pid read before it closed may name another process by now. */
  connected(): boolean;
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

/** A command's logger: to its config's logFile at its logLevel, each line naming the attachment. */
export type CommandLog = CommandContext['logger'];

/** The announcer's runner of CNI commands; `commandLog` makes each command's logger (daemon-verb.ts). */
export function cniRunner(a: Announcer, commandLog: CommandLog): CniRunner {
  const notes = new NodeOptionNotes(a);
  return async (env, stdin, gate, caller) => {
    // Each command tells the announcer when it was taken, with what it reports (the time to its round 1).
    const takenAt = a.timers.bootMs();
    const seen = viewOfCaller(a.views, caller);
    const view = seen instanceof CallerViewError ? a.views.mine : seen;
    const logger = loggerInView(commandLog, view);
    // Its waits and lock waits end when its gate stops it.
    const ctx: CommandContext = {
      libc: a.libc,
      open: inView(a.open, view),
      view,
      timers: { now: a.timers.now, bootMs: a.timers.bootMs, sleep: (ms) => a.waits.sleep(ms, gate.signal) },
      waits: { readable: (fds, ms) => a.waits.readable(fds, ms, gate.signal) },
      gate,
      logger,
      table: {
        added: (name, record, report, session) => a.jobs.added(name, record, report, session, takenAt),
        cancel: (name) => a.jobs.cancel(name),
      },
      frameBudget: a.frameBudget.first,
      attachmentLocks: { take: (name, ms) => a.attachmentLocks.take(name, ms, gate.signal) },
      written: a.written,
      closeInBackground: a.closeInBackground,
    };
    const refused = seen instanceof CallerViewError ? seen : undefined;
    const plugin = hostedPlugin(ctx, a.stateDir, refused, (config) => notes.note(config, logger(config, {})));
    let stdout = '';
    const io = { env, readStdin: async () => stdin, writeStdout: (text: string) => void (stdout += text) };
    const exit = await dispatch(io, plugin);
    return { exit, stdout };
  };
}

/**
 * The commands, each loaded the first time the announcer runs it, once its config was shown to `note` and found to be
 * this announcer's stateDir's (a path alias of the stateDir is refused too: its records are this announcer's to
 * write). Without its caller's view (`refused`), ADD and CHECK fail with code 100 naming why; DEL, GC and STATUS run in
 * the announcer's own view (DEL must not fail a chain).
 */
function hostedPlugin(
  ctx: CommandContext,
  stateDir: string,
  refused: CallerViewError | undefined,
  note: (config: PluginConfig) => void,
): CniPlugin {
  const admit = (config: PluginConfig, needsView: boolean): void => {
    note(config);
    if (config.stateDir !== stateDir)
      throw new CniError(
        ErrorCode.InvalidConfig,
        `"stateDir" is ${JSON.stringify(config.stateDir)}, and this announcer serves ${JSON.stringify(stateDir)}`,
      );
    if (needsView && refused) throw new CniError(ErrorCode.SystemCall, refused.message, { cause: refused });
  };
  return {
    add: async (req) => (admit(req.config, true), (await import('../commands/add')).add(ctx, req)),
    check: async (req) => (admit(req.config, true), (await import('../commands/check')).check(ctx, req)),
    del: async (req) => (admit(req.config, false), (await import('../commands/del')).del(ctx, req)),
    gc: async (req) => (admit(req.config, false), (await import('../commands/gc')).gc(ctx, req)),
    status: async (req) => (admit(req.config, false), (await import('../commands/status')).status(ctx, req)),
  };
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
 * `jobLog` writing each job's logFile as its caller saw it; in the announcer's own view when that cannot be had again
 * (where the job's skip is logged).
 */
export function jobLogInView(
  jobLog: (job: BackgroundJob) => Logger,
  views: CallerViews,
): (job: BackgroundJob) => Logger {
  return (job) =>
    job.logFile === undefined
      ? jobLog(job)
      : jobLog({ ...job, logFile: logFileInView(views.forRecorded(job.caller) ?? views.mine, job.logFile) });
}

/** `logger` writing each config's logFile as `view` sees it. */
export function loggerInView(logger: CommandLog, view: CallerView): CommandLog {
  return (config, ids) => logger({ ...config, logFile: logFileInView(view, config.logFile) }, ids);
}

/** `logFile` as `view` sees it, a symlink at its end refused (as it is in place); undefined for a symlink loop. */
function logFileInView(view: CallerView, logFile: string | undefined): string | undefined {
  // Logging must never break a command or the rounds.
  return logFile === undefined ? undefined : attempt(() => view.path(logFile, { followLast: false }));
}

/** A waiter still in the queue: takes the lock when called (one that gives up leaves the queue at once). */
type Waiter = () => void;

/**
 * The attachment locks of the one executor, in memory, keyed by attachment name (no file is made): a waiter queues
 * and is handed the lock when the holder releases it; one that waits past its timeout, or whose command is stopped,
 * leaves the queue. The timeout is a wait of the announcer's loop (its poll).
 */
export class MemoryLocks implements AttachmentLocks {
  /** Each held name, with the waiters queued behind its holder. */
  private readonly held = new Map<string, Waiter[]>();

  /** `sleep` waits through the announcer's loop (LoopWaits.sleep), ending early when `signal` aborts. */
  constructor(private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>) {}

  /**
   * Takes the lock of `name` within `timeoutMs`; undefined when it stays held that long; rejects once `signal` aborts.
   */
  take(name: string, timeoutMs: number, signal?: AbortSignal): Promise<HeldLock | undefined> {
    const queue = this.held.get(name);
    if (queue === undefined) {
      this.held.set(name, []);
      return Promise.resolve(this.lock(name));
    }
    if (timeoutMs <= 0) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      let settled = false;
      const waiter: Waiter = () => {
        settled = true;
        resolve(this.lock(name));
      };
      queue.push(waiter);
      const leave = (): boolean => !settled && ((settled = true), queue.splice(queue.indexOf(waiter), 1), true);
      this.sleep(timeoutMs, signal).then(
        () => leave() && resolve(undefined),
        (err: unknown) => leave() && reject(err),
      );
    });
  }

  private lock(name: string): HeldLock {
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.handOn(name);
      },
    };
  }

  /** The next waiter takes the lock; with none, the name is free. */
  private handOn(name: string): void {
    const next = this.held.get(name)!.shift();
    if (next) next();
    else this.held.delete(name);
  }
}

/** How many background closes are queued at most (koffi allows 256 queued async calls in all). */
export const MAX_CLOSES_IN_FLIGHT = 32;

/**
 * Closes the announcer's packet sockets on worker threads, a bounded number at a time. A packet socket's close waits
 * for an RCU grace period, so the loop hands it to koffi's async queue; that queue holds at most 256 calls and the
 * 257th
 * throws. At most MAX_CLOSES_IN_FLIGHT closes are in flight here; beyond that an fd waits in a FIFO until one
 * completes, and a close that cannot be queued runs synchronously. Nothing here ever throws.
 */
export class BackgroundCloser {
  private inFlight = 0;
  private readonly waiting: number[] = [];

  /** `failed` hears of every close that failed (it must not throw). */
  constructor(
    private readonly libc: Libc,
    private readonly failed: (fd: number, error: unknown) => void,
  ) {}

  /** Closes `fd` on a worker thread, now or once a close in flight completes. */
  close(fd: number): void {
    if (this.inFlight >= MAX_CLOSES_IN_FLIGHT) this.waiting.push(fd);
    else this.issue(fd);
  }

  /** Closes every waiting fd on this thread (the announcer stops); those in flight complete on their own. */
  closeWaiting(): void {
    for (const fd of this.waiting.splice(0)) this.closeNow(fd);
  }

  private issue(fd: number): void {
    this.inFlight++;
    try {
      this.libc.closeInBackground(fd, (error) => this.completed(fd, error));
    } catch (err) {
      // koffi's queue is full after all (closes queued by someone else): close it here.
      this.inFlight--;
      this.failed(fd, err);
      this.closeNow(fd);
    }
  }

  private completed(fd: number, error: unknown): void {
    this.inFlight--;
    if (error !== undefined) this.failed(fd, error);
    const next = this.waiting.shift();
    if (next !== undefined) this.issue(next);
  }

  private closeNow(fd: number): void {
    try {
      this.libc.close(fd);
    } catch (err) {
      this.failed(fd, err);
    }
  }
}

/**
 * Node options (idleExitMs, metricsFile, rateLimit) found in conflists: accepted, never applied (the announcer's node
 * settings are announcer.conf's), and said once. One WARN per network that carries any, on that network's log (its
 * logFile, and stdout under the DaemonSet), naming them and where to set them instead; and one WARN on the announcer's
 * own log per pair of networks of this stateDir that carry different values, naming both.
 */
class NodeOptionNotes {
  /** Each network that carried node options, with them, as first seen. */
  private readonly networks = new Map<string, Partial<Record<NodeOptionKey, unknown>>>();

  /** `a`: the announcer, whose node settings are in force and whose own log hears of a pair that differs. */
  constructor(private readonly a: Announcer) {}

  /** Notes a command's config; its network's first with node options logs a WARN on `networkLog`. */
  note(config: PluginConfig, networkLog: Logger): void {
    const found = config.nodeOptions;
    if (found === undefined || this.networks.has(config.name)) return;
    const keys = Object.keys(found) as NodeOptionKey[];
    const fields = {
      network: config.name,
      options: found,
      inForce: Object.fromEntries(keys.map((k) => [k, this.a.settings[k] ?? null])),
      setInstead: keys.map(whereToSet),
    };
    networkLog.warn("node options in this network's conflist are ignored: the node settings apply", fields);
    for (const [other, theirs] of this.networks) {
      const differ = keys.filter((k) => k in theirs && JSON.stringify(theirs[k]) !== JSON.stringify(found[k]));
      if (differ.length === 0) continue;
      this.a.log.warn('two networks of this stateDir set node options differently: both are ignored', {
        networks: [other, config.name],
        options: Object.fromEntries(differ.map((k) => [k, { [other]: theirs[k], [config.name]: found[k] }])),
        inForce: Object.fromEntries(differ.map((k) => [k, this.a.settings[k] ?? null])),
      });
    }
    this.networks.set(config.name, found);
  }
}
