// The command-line verbs of the executable, wired to the real process:
// `daemon` (started by ADD), and the CLI verbs of cli.ts.
// Loaded only when the executable is run with arguments.
import { fstatSync, lstatSync } from 'node:fs';
import { basename, dirname, join } from '../path';
import { netnsSockets } from '../announce/session';
import { CLI_VERBS, runVerb } from '../cli';
import { runDaemon } from '../daemon/daemon';
import { daemonLoggers } from '../daemon/daemon-log';
import { DAEMON_LOCK, DAEMON_VERB } from '../daemon/paths';
import { settingsFromArgv } from '../daemon/settings';
import { checkPrivateDir, ensurePrivateDir } from '../sys/private-dir';
import { replaceFile } from '../sys/safe-file';
import type { ProcessWiring } from './wiring';

/** The fds a starting client hands the announcer its lock and its listening control socket on. */
const INHERITED_LOCK_FD = 3;
const INHERITED_LISTEN_FD = 4;

/** Runs `verb` with `args`; resolves with the exit status (2 for an unknown verb). */
export async function runProcessVerb(wiring: ProcessWiring, verb: string, args: readonly string[], err: (line: string) => void): Promise<number> {
  if (CLI_VERBS.includes(verb)) return runVerb(verb, args, process.execPath);
  if (verb === DAEMON_VERB) return daemonVerb(wiring, args);
  err(`announcer: unknown verb ${JSON.stringify(verb)}; verbs: ${[...CLI_VERBS, DAEMON_VERB].join(', ')}, --version`);
  return 2;
}

/** `announcer daemon <stateDir> [settings]`, started by an ADD (src/daemon/client.ts). */
async function daemonVerb(wiring: ProcessWiring, args: readonly string[]): Promise<number> {
  const stateDir = args[0] ?? '';
  if (!stateDir.startsWith('/')) return 2;
  const settings = settingsFromArgv(args.slice(1));
  ensurePrivateDir(stateDir);
  const loggers = daemonLoggers({ daemon: process.pid });
  // Started by an ADD (client.ts): fd 3 is our lock and fd 4, if a socket, the control socket it made.
  const handedOver = isDaemonLock(INHERITED_LOCK_FD, stateDir);
  await runDaemon({
    stateDir,
    libc: wiring.libc(),
    sockets: wiring.libc(),
    open: netnsSockets(wiring.libc()),
    timers: wiring.timers,
    lockFile: wiring.lockFile,
    tryLock: wiring.libc().tryLock,
    ...loggers,
    budget: (limit) => wiring.frameBudget(stateDir, limit, loggers.log, 'later'),
    writeMetrics,
    closeInBackground: (fd, done) => wiring.libc().closeInBackground(fd, done),
    uid: process.geteuid?.() ?? 0,
    inheritedLockFd: handedOver ? INHERITED_LOCK_FD : undefined,
    inheritedListenFd: handedOver && isSocket(INHERITED_LISTEN_FD) ? INHERITED_LISTEN_FD : undefined,
    settings,
  });
  return 0;
}

/** Writes the metrics file atomically, only into a directory no one else can write. */
function writeMetrics(file: string, text: string): void {
  const dir = dirname(file);
  if (checkPrivateDir(dir) === 'missing') throw new Error(`${dir} does not exist`);
  replaceFile(dir, basename(file), text, 0o644);
}

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
