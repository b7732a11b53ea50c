// The process entry point: wires env, stdin and stdout into the dispatcher.
// `announcer tail RECORD` runs the background tail instead (started by ADD).
import { writeSync } from 'node:fs';
import { realTimers } from './announce/timers';
import { crashReply, dispatch } from './cni/dispatch';
import { createLogger, fileSink, silentLogger, type Logger, type LogLevel } from './log';
import { CLI_VERBS, runVerb } from './cli';
import { announcerPlugin } from './plugin';
import { loadLibc, type Libc } from './sys/libc';
import { spawnDetached } from './sys/spawn-detached';
import { selfCommand } from './self-command';
import { aboutText, versionText } from './about';
import { acquireFileLock } from './sys/file-lock';
import { loadTryLock } from './sys/flock';
import { closeAfterExit, holdUntilParentExits, HOLD_FDS_VERB } from './sys/close-after-exit';
import { readStdinBounded } from './sys/stdin';
import { basename, dirname, join } from 'node:path';
import { closeSync, fstatSync, lstatSync } from 'node:fs';
import { sharedFrameBudget, UNLIMITED, type FrameBudget } from './announce/frame-budget';
import type { RateLimit } from './announce/token-bucket';
import { askDaemon, askOrStartDaemon } from './daemon/client';
import { DAEMON_VERB, openDaemonLock, runDaemon } from './daemon/daemon';
import { DAEMON_LOCK } from './daemon/paths';
import { daemonLoggers } from './daemon/daemon-log';
import { settingsArgv, settingsFromArgv, type DaemonSettings } from './daemon/settings';
import { checkPrivateDir, ensurePrivateDir } from './sys/private-dir';
import { replaceFile } from './sys/safe-file';
import { loadUnixSockets } from './sys/unix-socket';

/** How long an ADD waits for the background announcer it starts, or a DEL for one that runs. */
const START_DAEMON_MS = 1000;
const ASK_DAEMON_MS = 2000;

/** Writes the metrics file atomically, only into a directory no one else can write. */
function writeMetrics(file: string, text: string): void {
  const dir = dirname(file);
  if (checkPrivateDir(dir) === 'missing') throw new Error(`${dir} does not exist`);
  replaceFile(dir, basename(file), text, 0o644);
}

/** The fds a starting client hands the announcer its lock and its listening control socket on. */
const INHERITED_LOCK_FD = 3;
const INHERITED_LISTEN_FD = 4;

/** Whether `fd` is open on stateDir's announcer lock file (so it was handed over by our starter). */
function isDaemonLock(fd: number, stateDir: string): boolean {
  try {
    const open = fstatSync(fd);
    const named = lstatSync(join(stateDir, DAEMON_LOCK));
    return open.dev === named.dev && open.ino === named.ino;
  } catch {
    return false;
  }
}

function isSocket(fd: number): boolean {
  try {
    return fstatSync(fd).isSocket();
  } catch {
    return false;
  }
}

function once<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}

function logger(logFile: string | undefined, level: LogLevel, fields: Record<string, unknown>) {
  return logFile ? createLogger(fileSink(logFile), level, fields) : silentLogger;
}

/** Writes the CNI reply with write(2): process.stdout would load node:net and streams (~8 ms). */
function writeStdout(text: string): void {
  const bytes = Buffer.from(text);
  for (let off = 0; off < bytes.length; ) {
    try {
      off += writeSync(1, bytes, off);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err; // a non-blocking pipe: retry
    }
  }
}

async function main(): Promise<void> {
  // What starts this program again (`ps` then shows e.g. `/opt/cni/bin/announcer tail …`).
  const self = selfCommand(process.argv, process.execPath);
  const libc: () => Libc = once(loadLibc);
  const timers = realTimers(() => libc().bootTimeMs());
  const tryLock = once(loadTryLock);
  const verb = process.argv[2];
  if (verb === '--version') {
    writeStdout(versionText());
    return process.exit(0);
  }
  if (verb !== undefined && CLI_VERBS.includes(verb)) return process.exit(await runVerb(verb, process.argv.slice(3), process.execPath));
  if (verb === HOLD_FDS_VERB) {
    holdUntilParentExits();
    return process.exit(0);
  }
  const lockFile = (path: string, timeoutMs: number) => acquireFileLock(path, timeoutMs, { tryLock: tryLock(), now: timers.now, sleep: timers.sleep });
  const frameBudget = (stateDir: string, limit: RateLimit | undefined, log: Logger, rounds: 'first' | 'later' = 'first'): FrameBudget =>
    limit ? sharedFrameBudget(stateDir, limit, lockFile, log, rounds) : UNLIMITED;
  if (verb === DAEMON_VERB) {
    // `announcer daemon <stateDir>`, started by an ADD (src/daemon/client.ts).
    const stateDir = process.argv[3] ?? '';
    if (!stateDir.startsWith('/')) return process.exit(2);
    const settings = settingsFromArgv(process.argv.slice(4));
    ensurePrivateDir(stateDir);
    const loggers = daemonLoggers({ daemon: process.pid });
    // Started by an ADD (client.ts): fd 3 is our lock and fd 4, if a socket, the control socket it made.
    const handedOver = isDaemonLock(INHERITED_LOCK_FD, stateDir);
    await runDaemon({
      stateDir,
      libc: libc(),
      sockets: loadUnixSockets(),
      timers,
      tryLock: tryLock(),
      ...loggers,
      budget: (limit) => frameBudget(stateDir, limit, loggers.log, 'later'),
      writeMetrics,
      closeInBackground: (fd) => libc().closeInBackground(fd),
      uid: process.geteuid?.() ?? 0,
      inheritedLockFd: handedOver ? INHERITED_LOCK_FD : undefined,
      inheritedListenFd: handedOver && isSocket(INHERITED_LISTEN_FD) ? INHERITED_LISTEN_FD : undefined,
      settings,
    });
    return process.exit(0);
  }
  // As the reference plugins do: run by hand, without CNI_COMMAND, say what this is.
  if (!process.env.CNI_COMMAND) {
    writeSync(2, aboutText());
    return process.exit(0);
  }
  const plugin = announcerPlugin({
    libc,
    timers,
    logger: (config, ids) => logger(config.logFile, config.logLevel, { containerId: ids.containerId, ifname: ids.ifname }),
    askDaemon: (stateDir, request, { start, fds = [] }) => {
      const client = {
        libc: libc(),
        sockets: loadUnixSockets(),
        now: timers.now,
        sleep: timers.sleep,
        lockFile,
        claimDaemonLock: (dir: string) => {
          const fd = openDaemonLock(dir);
          if (tryLock()(fd)) return fd;
          closeSync(fd);
          return undefined;
        },
        spawnDaemon: (dir: string, lockFd: number, listenFd: number | undefined, settings: DaemonSettings | undefined) =>
          void spawnDetached(libc(), self, [DAEMON_VERB, dir, ...settingsArgv(settings)], listenFd === undefined ? [lockFd] : [lockFd, listenFd]),
        closeFd: closeSync,
      };
      return start ? askOrStartDaemon(client, stateDir, request, START_DAEMON_MS, fds) : askDaemon(client, stateDir, request, ASK_DAEMON_MS, fds);
    },
    frameBudget,
    lockFile,
    closeAfterExit: (fds) => void closeAfterExit(libc(), (inherit) => spawnDetached(libc(), self, [HOLD_FDS_VERB], inherit), fds),
  });
  // Whatever escapes dispatch (a throw in a callback, a rejection nobody awaited) still ends as
  // one CNI error object and exit 1, never a stack trace.
  let replied = false;
  const reply = (text: string): void => {
    replied = true;
    writeStdout(text);
  };
  const crash = (err: unknown): void => {
    try {
      if (!replied) reply(crashReply(err));
    } finally {
      process.exit(1);
    }
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  const code = await dispatch({ env: process.env, readStdin: readStdinBounded, writeStdout: reply }, plugin);
  // stdout was written synchronously: exit now, whatever handles are still open.
  process.exit(code);
}

main().catch(() => process.exit(1));
