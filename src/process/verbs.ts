// The command-line verbs of the executable, wired to the real process:
// `daemon` (started by a CNI call, or run by the DaemonSet), and the CLI verbs of cli.ts.
// Loaded only when the executable is run with arguments.
import { closeSync, statSync, writeSync } from 'node:fs';
import { basename, dirname } from '../path';
import { CLI_VERBS, runVerb } from '../cli';
import { netnsSockets } from '../announce/session';
import { cniRunner } from '../daemon/cni-host';
import { runDaemon } from '../daemon/daemon';
import type { DaemonDeps } from '../daemon/daemon-deps';
import { parseDaemonArgs, type DaemonArgs } from '../daemon/daemon-args';
import { daemonLoggers } from '../daemon/daemon-log';
import { HttpListenError } from '../daemon/http-server';
import { DAEMON_VERB } from '../self-command';
import { askAnnouncer } from '../shim/ask';
import { BUILD_ID } from '../build-id';
import { NodeFrameBudget } from '../announce/frame-budget';
import { waitForLockHolder } from '../sys/lock-holder';
import { checkPrivateDir, ensurePrivateDir, privateDirProblem } from '../sys/private-dir';
import { readSmallFile, replaceFile } from '../sys/safe-file';
import { loadNodeSettings } from '../daemon/settings';
import { parseListenAddress } from '../sys/tcp-socket';
import { stampFd } from '../sys/progress-stamp';
import { CallerViews } from '../sys/caller-views';
import { jobLogInView } from '../daemon/caller-host';
import type { ProcessWiring } from './wiring';

/** Runs `verb` with `args`; resolves with the exit status (2 for an unknown verb). */
export async function runProcessVerb(
  wiring: ProcessWiring,
  verb: string,
  args: readonly string[],
  err: (line: string) => void,
): Promise<number> {
  if (CLI_VERBS.includes(verb)) return runVerb(verb, args, process.execPath);
  if (verb === DAEMON_VERB) {
    const parsed = parseDaemonArgs(args);
    if (parsed.ok) return daemonVerb(wiring, parsed.args, err);
    err(`announcer ${DAEMON_VERB}: ${parsed.problem}`);
    return 2;
  }
  err(`announcer: unknown verb ${JSON.stringify(verb)}; verbs: ${[...CLI_VERBS, DAEMON_VERB].join(', ')}, --version`);
  return 2;
}

/** `announcer daemon <stateDir> [flags]`, started by a shim (src/shim/start.ts) or run by the DaemonSet. */
async function daemonVerb(wiring: ProcessWiring, args: DaemonArgs, err: (line: string) => void): Promise<number> {
  const { stateDir } = args;
  let http: DaemonDeps['http'];
  try {
    http = args.listen === undefined ? undefined : { address: parseListenAddress(args.listen), sockets: wiring.libc() };
  } catch (error) {
    err(`announcer ${DAEMON_VERB}: --listen: ${(error as Error).message}`);
    return 2;
  }
  ensurePrivateDir(stateDir);
  const uid = process.geteuid?.() ?? 0;
  const node = loadNodeSettings(stateDir, args.settings, (path, max) => readSmallFile(path, max, uid));
  if (!node.ok) {
    err(`announcer ${DAEMON_VERB}: ${node.problem}`);
    return 2;
  }
  const run = runDaemon(realDaemonDeps(wiring, args, { settings: node.settings, http, uid }));
  // A DaemonSet's announcer that cannot serve its probes and metrics exits non-zero, and is restarted.
  return run.then(
    (took) => {
      if (took !== 'resident') return 0;
      err(`announcer ${DAEMON_VERB}: another resident announcer serves ${stateDir}: exiting`);
      return 1;
    },
    (error: unknown) => {
      if (!(error instanceof HttpListenError)) throw error;
      err(`announcer ${DAEMON_VERB}: ${error.message}`);
      return 1;
    },
  );
}

/** The announcer's dependencies in this process: its node settings, --listen's endpoint, and the user it serves. */
function realDaemonDeps(
  wiring: ProcessWiring,
  args: DaemonArgs,
  { settings, http, uid }: Pick<DaemonDeps, 'settings' | 'http' | 'uid'>,
): DaemonDeps {
  const { stateDir, readyFd } = args;
  const stdout = args.logFormat
    ? { format: args.logFormat, sink: (line: string) => void process.stdout.write(line) }
    : undefined;
  const loggers = daemonLoggers({ daemon: process.pid }, settings, stdout);
  const started = fileId(process.execPath);
  const frames = new NodeFrameBudget(() => settings.rateLimit);
  const views = new CallerViews();
  const libc = wiring.libc();
  return {
    stateDir,
    views,
    resident: args.resident,
    askHandover: () => askAnnouncer(stateDir, { op: 'handover' }, { start: false, timeoutMs: 0 }),
    waitForHolder: (fd, ms, fallbackMs) => waitForLockHolder({ libc }, fd, ms, fallbackMs),
    http,
    libc,
    sockets: libc,
    open: netnsSockets(libc),
    timers: wiring.timers,
    tryLock: libc.tryLock,
    log: loggers.log,
    jobLog: jobLogInView(loggers.jobLog, views),
    settings,
    budget: () => frames.budget('later'),
    writeMetrics,
    metricsFileProblem: (file) => privateDirProblem(dirname(file)),
    closeInBackground: (fd, done) => libc.closeInBackground(fd, done),
    uid,
    build: BUILD_ID,
    executableReplaced: () => fileId(process.execPath) !== started,
    stampProgress: (fd) => stampFd(fd, Date.now()),
    ...(readyFd === undefined ? {} : { ready: () => sayReady(readyFd) }),
    commands: (host) =>
      cniRunner({
        libc,
        timers: wiring.timers,
        frameBudget: () => frames.budget('first'),
        ...host,
        views,
        logger: loggers.commandLog,
      }),
  };
}

/** Writes the ready line to `fd` and closes it; a starter gone (EPIPE) or an fd not open (EBADF) changes nothing. */
function sayReady(fd: number): void {
  try {
    writeSync(fd, 'listening\n');
  } catch {
    // The shim that waited has gone: nobody to tell.
  }
  try {
    closeSync(fd);
  } catch {
    // Not open: nothing to close.
  }
}

/** The identity (device and inode) of the file at `path`, as text; '' when there is none. */
function fileId(path: string): string {
  try {
    const st = statSync(path);
    return `${st.dev}:${st.ino}`;
  } catch {
    return '';
  }
}

/** Writes the metrics file atomically, only into a directory no one else can write. */
function writeMetrics(file: string, text: string): void {
  const dir = dirname(file);
  if (checkPrivateDir(dir) === 'missing') throw new Error(`${dir} does not exist`);
  replaceFile(dir, basename(file), text, 0o644);
}
