// The process entry point: wires env, stdin and stdout into the dispatcher.
// `announcer tail RECORD` runs the background tail instead (started by ADD).
import { writeSync } from 'node:fs';
import { runTail } from './announce/tail';
import { awaitJob, tailStillWanted } from './announce/await-job';
import { TAIL_VERB } from './announce/tail-job';
import { realTimers } from './announce/timers';
import { crashReply, dispatch } from './cni/dispatch';
import { createLogger, fileSink, silentLogger, type LogLevel } from './log';
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
  if (process.argv[2] === TAIL_VERB) {
    // The job sits in the attachment's 0600 state record, not on the command line for `ps` to show.
    const recordFile = process.argv[3] ?? '';
    const job = await awaitJob(recordFile, timers);
    if (!job) return process.exit(0); // not needed after all, or DEL got there first
    const log = logger(job.logFile, job.logLevel, { containerId: job.containerId, ifname: job.ifname, tail: process.pid });
    try {
      await runTail({ libc: libc(), timers, log, stillWanted: () => tailStillWanted(recordFile, job) }, job);
    } catch (err) {
      log.error('background tail failed', { error: err });
    }
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
    startTail: (recordFile) => spawnDetached(libc(), self, [TAIL_VERB, recordFile]),
    lockFile: (path, timeoutMs) => acquireFileLock(path, timeoutMs, { tryLock: tryLock(), now: timers.now, sleep: timers.sleep }),
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
