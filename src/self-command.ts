/** What the kernel appends to /proc/self/exe once the executable's file is unlinked or renamed over. */
const DELETED = ' (deleted)';

/**
 * The argv prefix that starts this program again, for `[...prefix, verb, ...args]`:
 * the executable alone when it is a `bun build --compile` binary (its script is
 * inside it, at a virtual /$bunfs/ path in argv[1]), else the runtime and the
 * script (`node script.js`, as under unit tests). Run by a user-mode `emulator`
 * (see sys/emulator.ts), the same emulator goes first: without binfmt_misc the
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
 * past stdio. Its line (or its end, when that announcer exits first) tells the shim that started it to connect: that
 * shim does not poll while the announcer starts.
 */
export const READY_FD = 3;
