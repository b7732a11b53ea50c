/** What the kernel appends to /proc/self/exe once the executable's file is unlinked or renamed over. */
const DELETED = ' (deleted)';

/**
 * The argv prefix that starts this program again, for `[...prefix, verb, ...args]`:
 * the executable alone when it is a `bun build --compile` binary (its script is
 * inside it, at a virtual /$bunfs/ path in argv[1]), else the runtime and the
 * script (`node script.js`, as under unit tests). Run by a user-mode `emulator`
 * (see sys/detached.ts), the same emulator goes first: without binfmt_misc the
 * kernel cannot exec the program itself. An executable renamed over since this
 * process started (an upgrade) reads as `PATH (deleted)` (/proc/self/exe): the
 * command is the program now at PATH, which the runtime's next call runs too.
 */
export function selfCommand(argv: readonly string[], execPath: string, emulator?: string): string[] {
  const script = argv[1];
  const exe = execPath.endsWith(DELETED) ? execPath.slice(0, -DELETED.length) : execPath;
  const self = script === undefined || script.startsWith('/$bunfs/') ? [exe] : [exe, script];
  return emulator === undefined ? self : [emulator, ...self];
}

/** The verb that runs the node's announcer: `announcer daemon <stateDir> [flags]`. */
export const DAEMON_VERB = 'daemon';

/** The flag naming the fd on which an announcer says, once, that it listens (then closes it). */
export const READY_FD_FLAG = 'ready-fd';

/**
 * The fd a shim gives the announcer it starts as `--ready-fd`: one end of a pipe (a socketpair under Bun), the first
 * past stdio. Its one line tells the shim that started it how the start went (READY_LINES): that shim does not poll
 * while the announcer starts, and hears at once why one could not.
 */
export const READY_FD = 3;

/**
 * The announcer's one line on its ready fd: it listens; another announcer of its stateDir serves (it exits); or
 * `failed: <why>` (it exits 1). An end without a line: it died before it could say.
 */
export const READY_LINES = { listening: 'listening', served: 'served', failed: 'failed: ' } as const;

/** What a spawned announcer's ready line says: it listens, or another one serves; else why it could not start. */
export function readyOutcome(line: string): 'listening' | 'served' | { failed: string } {
  if (line === READY_LINES.listening || line === READY_LINES.served) return line;
  if (line.startsWith(READY_LINES.failed)) return { failed: line.slice(READY_LINES.failed.length) };
  return { failed: line === '' ? 'it exited before it listened' : `it said ${JSON.stringify(line)}` };
}

/** The most of the ready line a shim reads: a failure's reason is cut there. */
export const MAX_READY_LINE = 4096;
