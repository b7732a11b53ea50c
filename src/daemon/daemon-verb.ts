// `announcer daemon <stateDir> [--resident] [--log-format=json|logfmt] [--listen=HOST:PORT] [--ready-fd=N]`, started
// by a CNI call (src/shim/start.ts) or run by the DaemonSet: its arguments (how the process runs; the node settings
// are the stateDir's announcer.conf alone), the settings read once, and the announcer wired to the real process. How
// its start went is said once on --ready-fd (READY_LINES), and a failure on stderr too.
import { closeSync, writeSync } from 'node:fs';
import { netnsSockets } from '../announce/session';
import type { BackgroundJob, PodRef } from '../announce/background-job';
import { BUILD_ID } from '../about';
import { parseFlags } from '../cli-flags';
import { podOf } from '../cni/env';
import {
  NODE_SETTINGS_MAX_BYTES,
  parseNodeSettings,
  resolveNodeSettings,
  type NodeSettings,
} from '../cni/node-settings';
import {
  commandLogger,
  createLogger,
  fileSink,
  silentLogger,
  teeLogger,
  type LogFormat,
  type Logger,
  type LogLevel,
  type LogSink,
} from '../log';
import { basename, dirname, join } from '../path';
import { DAEMON_VERB, READY_FD_FLAG, READY_LINES } from '../self-command';
import { askAnnouncer } from '../shim/shim';
import { CallerViews } from '../sys/caller-view';
import type { Libc } from '../sys/libc';
import { stampFd, waitForLockHolder } from '../sys/lock-holder';
import { fileIdAt, sameFile } from '../sys/file-id';
import { attempt } from '../sys/sys-error';
import { threadsInOtherNetns } from '../sys/netns';
import { checkPrivateDir, ensurePrivateDir, privateDirProblem } from '../sys/private-dir';
import { readSmallFile, replaceFile } from '../sys/safe-file';
import { parseListenAddress, type TcpSockets } from '../sys/tcp-socket';
import type { UnixSockets } from '../sys/unix-socket';
import { NODE_SETTINGS_FILE } from '../state-files';
import type { Timers } from '../announce/context';
import { runDaemon, type DaemonDeps } from './daemon';
import { cniRunner, jobLogInView, type CommandLog } from './host';

/** The log formats of `--log-format`: one JSON object, or one logfmt line, per event on stdout. */
export const LOG_FORMATS = ['json', 'logfmt'] as const;

/** How `announcer daemon` was asked to run. */
export interface DaemonArgs {
  stateDir: string;
  /** Run by the DaemonSet: never exits for being idle, and takes over from an announcer a shim started. */
  resident: boolean;
  /** Log every event to stdout in this format (else to the configs' logFile only). */
  logFormat?: (typeof LOG_FORMATS)[number];
  /** HOST:PORT to serve /metrics and /healthz on. */
  listen?: string;
  /** The fd to write one line to once listening, then close (a pipe from the shim that started it). */
  readyFd?: number;
}

/** The usage line of `announcer daemon`. */
export const DAEMON_USAGE =
  'usage: announcer daemon <stateDir> [--resident] [--log-format=json|logfmt] [--listen=HOST:PORT] ' +
  `[--${READY_FD_FLAG}=N]`;

const SPEC = { resident: 'bool', 'log-format': 'string', listen: 'string', [READY_FD_FLAG]: 'int' } as const;

/** Parses the arguments after `daemon`; a problem is one line naming the argument. */
export function parseDaemonArgs(
  args: readonly string[],
): { ok: true; args: DaemonArgs } | { ok: false; problem: string } {
  const [stateDir = '', ...rest] = args;
  const bad = (problem: string) => ({ ok: false as const, problem: `${problem}; ${DAEMON_USAGE}` });
  if (!stateDir.startsWith('/')) return bad(`the stateDir must be an absolute path (got ${JSON.stringify(stateDir)})`);
  const parsed = parseFlags(rest, SPEC, DAEMON_USAGE);
  if (!parsed.ok) return parsed;
  const { resident = false, 'log-format': logFormat, listen, [READY_FD_FLAG]: readyFd } = parsed.flags;
  const out: DaemonArgs = { stateDir, resident };
  if (logFormat !== undefined) {
    if (!(LOG_FORMATS as readonly string[]).includes(logFormat))
      return bad(`--log-format must be json or logfmt (got ${JSON.stringify(logFormat)})`);
    out.logFormat = logFormat as DaemonArgs['logFormat'];
  }
  if (listen !== undefined) {
    if (!/^(\[[0-9a-fA-F:.]+\]|[^:\s]*):\d{1,5}$/.test(listen))
      return bad(`--listen must be HOST:PORT (got ${JSON.stringify(listen)})`);
    out.listen = listen;
  }
  if (readyFd !== undefined) {
    // Never stdin, stdout or stderr: the announcer closes it once it has said it listens.
    if (readyFd < 3) return bad(`--${READY_FD_FLAG} must be 3 or more (got ${readyFd})`);
    out.readyFd = readyFd;
  }
  return { ok: true, args: out };
}

/**
 * The node settings of stateDir's announcer: its announcer.conf over the defaults, read once at start; or the one line
 * saying why the announcer must not start (the file's bad field). `read` reads a small root-only regular file
 * (undefined when absent).
 */
export function loadNodeSettings(
  stateDir: string,
  read: (path: string, maxBytes: number) => string | undefined,
): { ok: true; settings: NodeSettings } | { ok: false; problem: string } {
  const file = join(stateDir, NODE_SETTINGS_FILE);
  let text: string | undefined;
  try {
    text = read(file, NODE_SETTINGS_MAX_BYTES);
  } catch (err) {
    return { ok: false, problem: `cannot read ${file}: ${(err as Error).message}` };
  }
  if (text === undefined) return { ok: true, settings: resolveNodeSettings({}) };
  const parsed = parseNodeSettings(text, file);
  return parsed.ok ? { ok: true, settings: resolveNodeSettings(parsed.settings) } : parsed;
}

/**
 * Runs `announcer daemon` with `argv` (after the verb); resolves with its exit status. `libc` loads libc on first use
 * (a bad argument is said without it), `timers` read the process's clocks.
 */
export async function daemonVerb(
  argv: readonly string[],
  err: (line: string) => void,
  libc: () => Libc & UnixSockets & TcpSockets,
  timers: Timers,
): Promise<number> {
  const parsed = parseDaemonArgs(argv);
  if (!parsed.ok) {
    err(`announcer ${DAEMON_VERB}: ${parsed.problem}`);
    return 2;
  }
  const { args } = parsed;
  const ready = readyLine(args.readyFd);
  const fail = (why: string, status: number): number => {
    ready.say(`${READY_LINES.failed}${why}`);
    err(`announcer ${DAEMON_VERB}: ${why}`);
    return status;
  };
  try {
    let listen: DaemonDeps['listen'];
    try {
      listen = args.listen === undefined ? undefined : parseListenAddress(args.listen);
    } catch (error) {
      return fail(`--listen: ${(error as Error).message}`, 2);
    }
    ensurePrivateDir(args.stateDir);
    const uid = process.geteuid?.() ?? 0;
    const node = loadNodeSettings(args.stateDir, (path, max) => readSmallFile(path, max, uid));
    if (!node.ok) return fail(node.problem, 2);
    const deps = realDaemonDeps(libc(), timers, args, node.settings, uid);
    const took = await runDaemon({ ...deps, listen, ready: () => ready.say(READY_LINES.listening) });
    if (took === 'served') ready.say(READY_LINES.served);
    // A DaemonSet's announcer that cannot serve its probes and metrics exits non-zero, and is restarted.
    return took === 'resident' ? fail(`another resident announcer serves ${args.stateDir}: exiting`, 1) : 0;
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error), 1);
  }
}

/**
 * The ready fd's one line (see READY_LINES), said at most once, then the fd is closed; without --ready-fd, nothing. A
 * starter gone (EPIPE) or an fd not open (EBADF) changes nothing.
 */
function readyLine(fd: number | undefined): { say(line: string): void } {
  let said = fd === undefined;
  return {
    say: (line) => {
      if (said) return;
      said = true;
      attempt(() => writeSync(fd!, `${line.replaceAll('\n', ' ')}\n`)); // the shim that waited may have gone
      attempt(() => closeSync(fd!)); // not open: nothing to close
    },
  };
}

/** The announcer's dependencies in this process. */
function realDaemonDeps(
  libc: Libc & UnixSockets & TcpSockets,
  timers: Timers,
  args: DaemonArgs,
  settings: NodeSettings,
  uid: number,
): DaemonDeps {
  const { stateDir } = args;
  const stdout = args.logFormat
    ? { format: args.logFormat, sink: (line: string) => void process.stdout.write(line) }
    : undefined;
  const loggers = daemonLoggers({ daemon: process.pid }, settings, stdout);
  const started = fileIdAt(process.execPath);
  const views = new CallerViews();
  return {
    stateDir,
    build: BUILD_ID,
    resident: args.resident,
    settings,
    libc,
    open: netnsSockets(libc),
    views,
    timers,
    log: loggers.log,
    jobLog: jobLogInView(loggers.jobLog, views),
    uid,
    askHandover: () => askAnnouncer(stateDir, { op: 'handover' }),
    waitForHolder: (fd, ms, fallbackMs) => waitForLockHolder(libc, fd, ms, fallbackMs),
    writeMetrics,
    metricsFileProblem: (file) => privateDirProblem(dirname(file)),
    stampProgress: (fd) => stampFd(fd, Date.now()),
    executableReplaced: () => !sameFile(fileIdAt(process.execPath), started),
    threadsInOtherNetns,
    commands: (announcer) => cniRunner(announcer, loggers.commandLog),
  };
}

/** Writes the metrics file atomically, only into a directory no one else can write. */
function writeMetrics(file: string, text: string): void {
  const dir = dirname(file);
  if (checkPrivateDir(dir) === 'missing') throw new Error(`${dir} does not exist`);
  replaceFile(dir, basename(file), text, 0o644);
}

// The announcer's loggers. It serves many networks, each with its own logFile: every job logs to its network's file,
// and the announcer's own lines go to the node's log (the node settings' logFile and logLevel), never to a network's.
// With `--log-format` (the DaemonSet's announcer), every line at info and above also goes to stdout, structured, each
// pod's naming it (container, ifname, K8S_POD_NAMESPACE/K8S_POD_NAME, IPs) so that `kubectl logs … | grep <pod>` says
// what was sent for it.

/** Where structured lines go (stdout), and in which format. */
export interface StdoutLog {
  format: Exclude<LogFormat, 'text'>;
  sink: LogSink;
  now?: () => Date;
}

/**
 * The announcer's own logger, the factory of per-job loggers that steers it, and the loggers of the commands it runs.
 */
export function daemonLoggers(
  fields: Record<string, unknown>,
  own: { logFile?: string | undefined; logLevel: LogLevel },
  stdout?: StdoutLog,
): { log: Logger; jobLog(job: BackgroundJob): Logger; commandLog: CommandLog } {
  const out = stdout ? createLogger(stdout.sink, 'info', fields, stdout.now, stdout.format) : undefined;
  const toStdout = (file: Logger, more: Record<string, unknown>): Logger =>
    out ? teeLogger(file, out.with(more)) : file;
  const log = own.logFile ? createLogger(fileSink(own.logFile), own.logLevel, fields) : silentLogger;
  return {
    log: toStdout(log, {}),
    jobLog(job) {
      const file = job.logFile ? createLogger(fileSink(job.logFile), job.logLevel, fields) : silentLogger;
      return toStdout(file.with({ containerId: job.containerId, ifname: job.ifname }), jobFields(job));
    },
    commandLog(config, ids) {
      const pod = podFields(ids.args ? podOf(ids.args.raw) : undefined);
      return toStdout(commandLogger(config, ids), { containerId: ids.containerId, ifname: ids.ifname, ...pod });
    },
  };
}

/** What names a job's pod in a structured line. */
export function jobFields(job: BackgroundJob): Record<string, unknown> {
  const ips = job.interfaces.flatMap((i) => [...i.ipv4, ...i.ipv6]);
  return { network: job.network, containerId: job.containerId, ifname: job.ifname, ...podFields(job.pod), ips };
}

function podFields(pod: PodRef | undefined): Record<string, unknown> {
  return pod ? { K8S_POD_NAMESPACE: pod.namespace, K8S_POD_NAME: pod.name } : {};
}
