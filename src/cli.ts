// The command-line verbs besides the CNI protocol (which runtimes drive with
// CNI_* variables and no arguments) and `daemon` (src/process/verbs.ts): `install`,
// for the DaemonSet; `status` and `announce`, for operators on a node; `schema`, for editors.
import { writeSync } from 'node:fs';
import { install, INSTALL_USAGE, INSTALL_VERB } from './commands/install';
import { listRecords } from './announce/state';
import { netnsSockets } from './announce/session';
import { realTimers } from './process/real-timers';
import { announceCommand, ANNOUNCE_USAGE, ANNOUNCE_VERB } from './commands/announce-cli';
import { statusCommand, STATUS_USAGE, STATUS_VERB } from './process/status-cli';
import { checkReply } from './daemon/protocol';
import { askAnnouncer } from './shim/ask';
import { silentLogger } from './log';
import { loadLibc } from './sys/libc';
import { SCHEMA_USAGE, SCHEMA_VERB } from './commands/schema-verb';
import { NODE_SETTINGS_FILE } from './state-files';
import { dirname, join } from './path';
import { ensurePrivateDir, privateDirProblem } from './sys/private-dir';
import { dirProblem, installFile, readSmallFile, removeStaleTemps, replaceFile } from './sys/safe-file';

/** The verbs runVerb handles, each with its usage line and what it does (`announcer --help` lists them). */
export const CLI_VERBS: readonly { verb: string; usage: string; what: string }[] = [
  {
    verb: INSTALL_VERB,
    usage: INSTALL_USAGE,
    what: "installs this executable into a CNI bin dir (atomically), and writes the node's announcer.conf",
  },
  {
    verb: STATUS_VERB,
    usage: STATUS_USAGE,
    what: "what the node's announcer is doing (or, with none running, what the records say)",
  },
  { verb: ANNOUNCE_VERB, usage: ANNOUNCE_USAGE, what: "announces an interface's addresses in a netns now, by hand" },
  { verb: SCHEMA_VERB, usage: SCHEMA_USAGE, what: "prints the JSON Schema of the plugin's entry in a conflist" },
];

function line(fd: number, text: string): void {
  writeSync(fd, `${text}\n`);
}

/**
 * Runs `verb` with `args` and resolves with its exit status; `self` is the running executable (what `install` copies).
 */
export async function runVerb(verb: string, args: readonly string[], self: string): Promise<number> {
  // Loaded when it runs: zod's JSON Schema export is no part of the announcer's start.
  if (verb === SCHEMA_VERB)
    return (await import('./commands/schema')).schemaCommand({ out: (t) => line(1, t), err: (t) => line(2, t) }, args);
  if (verb === STATUS_VERB || verb === ANNOUNCE_VERB) {
    const libc = loadLibc();
    const timers = realTimers(() => libc.bootTimeMs());
    const io = { out: (t: string) => line(1, t), err: (t: string) => line(2, t) };
    if (verb === ANNOUNCE_VERB)
      return announceCommand({ libc, open: netnsSockets(libc), timers, log: silentLogger, ...io }, args);
    return statusCommand(
      {
        ask: async (stateDir) => checkReply(await askAnnouncer(stateDir, { op: 'status' })),
        records: listRecords,
        bootMs: timers.bootMs,
        ...io,
      },
      args,
    );
  }
  if (verb === INSTALL_VERB) {
    return install(
      {
        self,
        dirProblem,
        installFile,
        removeStaleTemps,
        writeNodeSettings: (stateDir, text) => {
          ensurePrivateDir(stateDir);
          const path = join(stateDir, NODE_SETTINGS_FILE);
          if (currentText(path, text.length) === text) return { path, changed: false };
          return { path: replaceFile(stateDir, NODE_SETTINGS_FILE, text, 0o600), changed: true };
        },
        metricsFileProblem: (file) => privateDirProblem(dirname(file)),
        now: Date.now,
        out: (t) => line(1, t),
        err: (t) => line(2, t),
      },
      args,
    );
  }
  return 2;
}

/** The text of `path` if it is our regular file of at most `maxBytes` bytes; else undefined (it is then replaced). */
function currentText(path: string, maxBytes: number): string | undefined {
  try {
    return readSmallFile(path, maxBytes, process.geteuid?.() ?? 0);
  } catch {
    return undefined;
  }
}
