// The command-line verbs (the executable run with arguments; runtimes drive the CNI protocol with CNI_* variables and
// none): `daemon`, the node's announcer (src/daemon/daemon-verb.ts); `install`, for the DaemonSet; `status` and
// `announce`, for operators on a node; `schema`, for editors. Loaded only when the executable is run with arguments.
// The process's one real clock and sleep are made here: src/daemon, src/announce and src/commands, where timer
// globals are banned (biome.json), get them injected, and the announcer's sleeps are deadlines in its poll(2).
import type { Timers } from './announce/context';
import { netnsSockets } from './announce/session';
import { announceCommand, ANNOUNCE_USAGE, ANNOUNCE_VERB } from './commands/announce-cli';
import { install, INSTALL_USAGE, INSTALL_VERB, type InstallDeps } from './commands/install';
import { DAEMON_USAGE, daemonVerb } from './daemon/daemon-verb';
import { statusCommand, STATUS_USAGE, STATUS_VERB } from './daemon/status-cli';
import { once } from './once';
import { dirname, join } from './path';
import { DAEMON_VERB } from './self-command';
import { NODE_SETTINGS_FILE } from './state-files';
import { loadLibc } from './sys/libc';
import { ensurePrivateDir, privateDirProblem } from './sys/private-dir';
import { dirProblem, installFile, readSmallFile, removeStaleTemps, replaceFile } from './sys/safe-file';
import { attempt } from './sys/sys-error';

/** Where a verb writes, a line at a time. */
export interface VerbIo {
  out(line: string): void;
  err(line: string): void;
}

/** The verbs, each with its usage line, what it does (`announcer --help` lists them) and how it runs. */
export const CLI_VERBS: readonly {
  verb: string;
  usage: string;
  what: string;
  run(args: readonly string[], io: VerbIo): number | Promise<number>;
}[] = [
  {
    verb: INSTALL_VERB,
    usage: INSTALL_USAGE,
    what: "installs this executable into a CNI bin dir (atomically), and writes the node's announcer.conf",
    run: (args, io) => install(installDeps(io), args),
  },
  {
    verb: STATUS_VERB,
    usage: STATUS_USAGE,
    what: "what the node's announcer is doing (or, with none running, what the records say)",
    run: (args, io) => {
      const libc = loadLibc();
      return statusCommand(io, () => libc.bootTimeMs(), args);
    },
  },
  {
    verb: ANNOUNCE_VERB,
    usage: ANNOUNCE_USAGE,
    what: "announces an interface's addresses in a netns now, by hand",
    run: (args, io) => {
      const libc = loadLibc();
      const timers = realTimers(() => libc.bootTimeMs());
      return announceCommand({ libc, open: netnsSockets(libc), timers, ...io }, args);
    },
  },
  {
    verb: 'schema',
    usage: 'usage: announcer schema',
    what: "prints the JSON Schema of the plugin's entry in a conflist",
    run: async (args, io) => {
      if (args.length > 0) {
        io.err('announcer schema: takes no arguments');
        return 2;
      }
      // Loaded when it runs: zod's JSON Schema export is no part of the announcer's start.
      io.out(JSON.stringify((await import('./commands/schema')).entryJsonSchema(), null, 2));
      return 0;
    },
  },
  {
    verb: DAEMON_VERB,
    usage: DAEMON_USAGE,
    what: "runs the node's announcer of a stateDir (a CNI call starts one; the DaemonSet runs one)",
    run: (args, io) => {
      const libc = once(loadLibc);
      const timers = realTimers(() => libc().bootTimeMs());
      return daemonVerb(args, io.err, libc, timers);
    },
  },
];

/** The real clock and sleep of the process; `bootTimeMs` reads CLOCK_BOOTTIME (through libc). */
export function realTimers(bootTimeMs: () => number): Timers {
  return {
    // process.hrtime, not performance.now(): the `performance` global loads perf_hooks.
    now: () => Number(process.hrtime.bigint()) / 1e6,
    bootMs: bootTimeMs,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
}

/**
 * Runs `verb` with `args`; resolves with the exit status (2 for an unknown verb). `--help` (or `-h`) prints the verbs;
 * after a verb, its usage; both on `out`, exit 0.
 */
export async function runProcessVerb(verb: string, args: readonly string[], io: VerbIo): Promise<number> {
  if (verb === '--help' || verb === '-h') {
    const verbs = CLI_VERBS.flatMap((v) => [`  ${v.verb}: ${v.what}`, `    ${v.usage}`]);
    io.out(
      [
        'usage: announcer VERB [ARGS]   (announcer VERB --help: its usage)',
        '       announcer --version',
        '       announcer                as a CNI plugin: CNI_COMMAND and the other CNI_* variables, ' +
          'the config on stdin',
        'verbs:',
        ...verbs,
      ].join('\n'),
    );
    return 0;
  }
  const known = CLI_VERBS.find((v) => v.verb === verb);
  if (known && (args.includes('--help') || args.includes('-h'))) {
    io.out(known.usage);
    return 0;
  }
  if (known) return known.run(args, io);
  const verbs = [...CLI_VERBS.map((v) => v.verb), '--version', '--help'];
  io.err(`announcer: unknown verb ${JSON.stringify(verb)}; verbs: ${verbs.join(', ')}`);
  return 2;
}

/** What `install` works on: this executable, the real file system, and `io`. */
function installDeps(io: VerbIo): InstallDeps {
  return {
    self: process.execPath,
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
    ...io,
  };
}

/** The text of `path` if it is our regular file of at most `maxBytes` bytes; else undefined (it is then replaced). */
function currentText(path: string, maxBytes: number): string | undefined {
  return attempt(() => readSmallFile(path, maxBytes, process.geteuid?.() ?? 0));
}
