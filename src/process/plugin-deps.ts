// The CNI commands' dependencies in the CNI process, where they run when the
// shim falls back (src/shim): loggers to logFile, the announcer asked over its
// socket, blocking waits and closes (the CNI process may block: it serves one
// call). Loaded only when a command runs in-process.
import type { CommandDeps } from '../commands/deps';
import type { Libc } from '../sys/libc';
import { blockingWaits } from '../announce/waits';
import { checkReply } from '../daemon/protocol';
import { loadNodeSettings } from '../daemon/settings';
import { readSmallFile } from '../sys/safe-file';
import { commandLogger } from '../log';
import { ownView } from '../sys/caller-view';
import { askAnnouncer } from '../shim/ask';
import { START_MS } from '../shim/wire';
import { NodeFrameBudget } from '../announce/frame-budget';
import type { ProcessWiring } from './wiring';

/** The commands' dependencies in this process. */
export function pluginDeps(wiring: ProcessWiring): CommandDeps {
  const { libc, timers, lockFile } = wiring;
  return {
    view: ownView(),
    libc,
    timers,
    logger: commandLogger,
    waits: blockingWaits({ pollIn: (fds, ms) => libc().pollIn(fds, ms) }),
    askAnnouncer: async (stateDir, request, { start }) => {
      try {
        return checkReply(await askAnnouncer(stateDir, request, { start, timeoutMs: START_MS }));
      } catch {
        return undefined; // no announcer to ask, nor one to start: the record keeps the work
      }
    },
    // The node settings' rateLimit, as the stateDir's announcer reads it (a bad file: no limit; no announcer starts).
    frameBudget: (stateDir) => {
      const node = loadNodeSettings(stateDir, {}, (path, max) => readSmallFile(path, max, process.geteuid?.() ?? 0));
      return new NodeFrameBudget(() => (node.ok ? node.settings.rateLimit : undefined)).budget('first');
    },
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
