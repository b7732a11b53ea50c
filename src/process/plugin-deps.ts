// The CNI commands' dependencies in the real process: loggers to logFile, the
// background announcer's client, blocking waits and closes (the CNI process
// may block: it serves one call). Loaded only when a command other than VERSION runs.
import { closeSync } from 'node:fs';
import type { CommandDeps } from '../commands/deps';
import type { Libc } from '../sys/libc';
import { blockingWaits } from '../announce/waits';
import { askDaemon, askOrStartDaemon } from '../daemon/client';
import { DAEMON_VERB, openDaemonLock } from '../daemon/paths';
import { settingsArgv, type DaemonSettings } from '../daemon/settings';
import { createLogger, fileSink, silentLogger } from '../log';
import { spawnDetached } from '../sys/spawn-detached';
import type { ProcessWiring } from './wiring';

/** How long an ADD waits for the background announcer it starts, or a DEL for one that runs. */
const START_DAEMON_MS = 1000;
const ASK_DAEMON_MS = 2000;

/** The commands' dependencies; `self` is the argv prefix that starts this program again. */
export function pluginDeps(wiring: ProcessWiring, self: readonly string[]): CommandDeps {
  const { libc, timers, lockFile } = wiring;
  return {
    libc,
    timers,
    logger: (config, ids) =>
      config.logFile ? createLogger(fileSink(config.logFile), config.logLevel, { containerId: ids.containerId, ifname: ids.ifname }) : silentLogger,
    waits: blockingWaits({ pollIn: (fds, ms) => libc().pollIn(fds, ms) }),
    askAnnouncer: async (stateDir, request, { start }) => {
      const client = {
        libc: libc(),
        sockets: libc(),
        now: timers.now,
        sleep: timers.sleep,
        lockFile,
        claimDaemonLock: (dir: string) => {
          const fd = openDaemonLock(dir);
          if (libc().tryLock(fd)) return fd;
          closeSync(fd);
          return undefined;
        },
        spawnDaemon: (dir: string, lockFd: number, listenFd: number | undefined, settings: DaemonSettings | undefined) =>
          void spawnDetached(libc(), self, [DAEMON_VERB, dir, ...settingsArgv(settings)], listenFd === undefined ? [lockFd] : [lockFd, listenFd]),
        closeFd: closeSync,
      };
      try {
        return (start ? await askOrStartDaemon(client, stateDir, request, START_DAEMON_MS) : await askDaemon(client, stateDir, request, ASK_DAEMON_MS)).reply;
      } catch {
        return undefined; // no announcer to ask, nor one to start (a spawn that failed): the record keeps the work
      }
    },
    frameBudget: wiring.frameBudget,
    lockFile,
    // The last close of each, paid here (8-16 ms each): the announcer pays it on another thread.
    release: (fds) => fds.forEach((fd) => closeQuietly(libc(), fd)),
  };
}

/** close(2), its failure ignored: Linux frees the fd even when close reports an error, and release must not throw. */
function closeQuietly(libc: Libc, fd: number): void {
  try {
    libc.close(fd);
  } catch {
    // nothing left to undo
  }
}
