// The command-line verbs (the executable run with arguments; runtimes drive the CNI protocol with CNI_* variables and
// none): `daemon`, the node's announcer (src/daemon/daemon-verb.ts); `install`, for the DaemonSet; `status` and
// `announce`, for operators on a node; `schema`, for editors. Loaded only when the executable is run with arguments.
// The process's one real clock and sleep are made here: src/daemon, src/announce and src/commands, where timer
// globals are banned (biome.json), get them injected, and the announcer's sleeps are deadlines in its poll(2).
import { writeSync } from 'node:fs';
import type { Timers } from './announce/context';
import { install, INSTALL_USAGE, INSTALL_VERB } from './commands/install';
import { listRecords } from './announce/state';
import { netnsSockets } from './announce/session';
import { announceCommand, ANNOUNCE_USAGE, ANNOUNCE_VERB } from './commands/announce-cli';
import { statusCommand, STATUS_USAGE, STATUS_VERB } from './daemon/status-cli';
import { DAEMON_USAGE, daemonVerb } from './daemon/daemon-verb';
import { askAnnouncer } from './shim/shim';
import { silentLogger } from './log';
import { loadLibc } from './sys/libc';
import { once } from './once';
import { SCHEMA_USAGE, SCHEMA_VERB } from './commands/schema-verb';
import { DAEMON_VERB } from './self-command';
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
  {
    verb: DAEMON_VERB,
    usage: DAEMON_USAGE,
    what: "runs the node's announcer of a stateDir (a CNI call starts one; the DaemonSet runs one)",
  },
];

/** `announcer --help`: every verb, its usage and what it does. */
export function helpText(): string {
  const lines = CLI_VERBS.flatMap((v) => [`  ${v.verb}: ${v.what}`, `    ${v.usage}`]);
  return [
    'usage: announcer VERB [ARGS]   (announcer VERB --help: its usage)',
    '       announcer --version',
    '       announcer                as a CNI plugin: CNI_COMMAND and the other CNI_* variables, the config on stdin',
    'verbs:',
    ...lines,
    '',
  ].join('\n');
}

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
export async function runProcessVerb(
  verb: string,
  args: readonly string[],
  io: { out(text: string): void; err(line: string): void },
): Promise<number> {
  if (verb === '--help' || verb === '-h') {
    io.out(helpText());
    return 0;
  }
  const known = CLI_VERBS.find((v) => v.verb === verb);
  if (known && (args.includes('--help') || args.includes('-h'))) {
    io.out(`${known.usage}\n`);
    return 0;
  }
  if (verb === DAEMON_VERB) {
    const libc = once(loadLibc);
    return daemonVerb(
      args,
      io.err,
      libc,
      realTimers(() => libc().bootTimeMs()),
    );
  }
  if (known) return runVerb(verb, args, process.execPath);
  const verbs = [...CLI_VERBS.map((v) => v.verb), '--version', '--help'];
  io.err(`announcer: unknown verb ${JSON.stringify(verb)}; verbs: ${verbs.join(', ')}`);
  return 2;
}

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
        ask: (stateDir) => askAnnouncer(stateDir, { op: 'status' }),
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
