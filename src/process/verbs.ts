// The command-line verbs of the executable, wired to the real process:
// `daemon` (started by a CNI call, or run by the DaemonSet), and the CLI verbs of cli.ts.
// Loaded only when the executable is run with arguments.
import { closeSync, writeSync } from 'node:fs';
import { basename, dirname } from '../path';
import { CLI_VERBS, runVerb } from '../cli';
import { netnsSockets } from '../announce/session';
import { threadsInOtherNetns } from '../sys/netns';
import { cniRunner } from '../daemon/cni-host';
import { runDaemon } from '../daemon/daemon';
import type { DaemonDeps } from '../daemon/daemon-deps';
import { DAEMON_USAGE, parseDaemonArgs, type DaemonArgs } from '../daemon/daemon-args';
import { daemonLoggers } from '../daemon/daemon-log';
import { DAEMON_VERB, READY_LINES } from '../self-command';
import { askAnnouncer } from '../shim/ask';
import { BUILD_ID } from '../build-id';
import { NodeFrameBudget } from '../announce/frame-budget';
import { stampFd, waitForLockHolder } from '../sys/lock-holder';
import { checkPrivateDir, ensurePrivateDir, privateDirProblem } from '../sys/private-dir';
import { readSmallFile, replaceFile } from '../sys/safe-file';
import { loadNodeSettings } from '../daemon/settings';
import { parseListenAddress } from '../sys/tcp-socket';
import { CallerViews } from '../sys/caller-view';
import { fileIdAt, sameFile } from '../sys/file-id';
import { jobLogInView } from '../daemon/caller-host';
import type { ProcessWiring } from './wiring';

/** `announcer --help`: every verb, its usage and what it does. */
export function helpText(): string {
  const verbs = [...CLI_VERBS, { verb: DAEMON_VERB, usage: DAEMON_USAGE, what: DAEMON_WHAT }];
  const lines = verbs.flatMap((v) => [`  ${v.verb}: ${v.what}`, `    ${v.usage}`]);
  return [
    'usage: announcer VERB [ARGS]   (announcer VERB --help: its usage)',
    '       announcer --version',
    '       announcer                as a CNI plugin: CNI_COMMAND and the other CNI_* variables, the config on stdin',
    'verbs:',
    ...lines,
    '',
  ].join('\n');
}

/** What `announcer daemon` is, for the help. */
const DAEMON_WHAT = "runs the node's announcer of a stateDir (a CNI call starts one; the DaemonSet runs one)";

/**
 * Runs `verb` with `args`; resolves with the exit status (2 for an unknown verb). `--help` (or `-h`) prints the verbs;
 * after a verb, its usage; both on `out`, exit 0.
 */
export async function runProcessVerb(
  wiring: ProcessWiring,
  verb: string,
  args: readonly string[],
  io: { out(text: string): void; err(line: string): void },
): Promise<number> {
  const { err } = io;
  if (verb === '--help' || verb === '-h') {
    io.out(helpText());
    return 0;
  }
  const usage = verb === DAEMON_VERB ? DAEMON_USAGE : CLI_VERBS.find((v) => v.verb === verb)?.usage;
  if (usage !== undefined && (args.includes('--help') || args.includes('-h'))) {
    io.out(`${usage}\n`);
    return 0;
  }
  if (CLI_VERBS.some((v) => v.verb === verb)) return runVerb(verb, args, process.execPath);
  if (verb === DAEMON_VERB) {
    const parsed = parseDaemonArgs(args);
    if (parsed.ok) return daemonVerb(wiring, parsed.args, err);
    err(`announcer ${DAEMON_VERB}: ${parsed.problem}`);
    return 2;
  }
  const known = [...CLI_VERBS.map((v) => v.verb), DAEMON_VERB, '--version', '--help'];
  err(`announcer: unknown verb ${JSON.stringify(verb)}; verbs: ${known.join(', ')}`);
  return 2;
}

/**
 * `announcer daemon <stateDir> [flags]`, started by a shim (src/shim/start.ts) or run by the DaemonSet. How its start
 * went is said once on --ready-fd (READY_LINES: listening, another serves, or why it cannot start), and a failure on
 * stderr too, with exit 1.
 */
async function daemonVerb(wiring: ProcessWiring, args: DaemonArgs, err: (line: string) => void): Promise<number> {
  const ready = readyLine(args.readyFd);
  const fail = (why: string, status: number): number => {
    ready.say(`${READY_LINES.failed}${why}`);
    err(`announcer ${DAEMON_VERB}: ${why}`);
    return status;
  };
  try {
    const { stateDir } = args;
    let http: DaemonDeps['http'];
    try {
      http =
        args.listen === undefined ? undefined : { address: parseListenAddress(args.listen), sockets: wiring.libc() };
    } catch (error) {
      return fail(`--listen: ${(error as Error).message}`, 2);
    }
    ensurePrivateDir(stateDir);
    const uid = process.geteuid?.() ?? 0;
    const node = loadNodeSettings(stateDir, args.settings, (path, max) => readSmallFile(path, max, uid));
    if (!node.ok) return fail(node.problem, 2);
    const deps = realDaemonDeps(wiring, args, { settings: node.settings, http, uid });
    const took = await runDaemon({ ...deps, ready: () => ready.say(READY_LINES.listening) });
    if (took === 'served') ready.say(READY_LINES.served);
    // A DaemonSet's announcer that cannot serve its probes and metrics exits non-zero, and is restarted.
    return took === 'resident' ? fail(`another resident announcer serves ${stateDir}: exiting`, 1) : 0;
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error), 1);
  }
}

/** The ready fd's one line (see READY_LINES), said at most once; without --ready-fd, nothing. */
function readyLine(fd: number | undefined): { say(line: string): void } {
  let said = fd === undefined;
  return {
    say: (line) => {
      if (said) return;
      said = true;
      sayOn(fd!, line);
    },
  };
}

/** The announcer's dependencies in this process: its node settings, --listen's endpoint, and the user it serves. */
function realDaemonDeps(
  wiring: ProcessWiring,
  args: DaemonArgs,
  { settings, http, uid }: Pick<DaemonDeps, 'settings' | 'http' | 'uid'>,
): DaemonDeps {
  const { stateDir } = args;
  const stdout = args.logFormat
    ? { format: args.logFormat, sink: (line: string) => void process.stdout.write(line) }
    : undefined;
  const loggers = daemonLoggers({ daemon: process.pid }, settings, stdout);
  const started = fileIdAt(process.execPath);
  const frames = new NodeFrameBudget(() => settings.rateLimit);
  const views = new CallerViews();
  const libc = wiring.libc();
  return {
    stateDir,
    views,
    resident: args.resident,
    askHandover: () => askAnnouncer(stateDir, { op: 'handover' }),
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
    executableReplaced: () => !sameFile(fileIdAt(process.execPath), started),
    stampProgress: (fd) => stampFd(fd, Date.now()),
    threadsInOtherNetns,
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

/** Writes `line` to `fd` and closes it; a starter gone (EPIPE) or an fd not open (EBADF) changes nothing. */
function sayOn(fd: number, line: string): void {
  try {
    writeSync(fd, `${line.replaceAll('\n', ' ')}\n`);
  } catch {
    // The shim that waited has gone: nobody to tell.
  }
  try {
    closeSync(fd);
  } catch {
    // Not open: nothing to close.
  }
}

/** Writes the metrics file atomically, only into a directory no one else can write. */
function writeMetrics(file: string, text: string): void {
  const dir = dirname(file);
  if (checkPrivateDir(dir) === 'missing') throw new Error(`${dir} does not exist`);
  replaceFile(dir, basename(file), text, 0o644);
}
