/**
 * The argv prefix that starts this program again, for `[...prefix, verb, ...args]`:
 * the executable alone when it is a `bun build --compile` binary (its script is
 * inside it, at a virtual /$bunfs/ path in argv[1]), else the runtime and the
 * script (`node script.js`, as under unit tests). Run by a user-mode `emulator`
 * (see sys/emulator.ts), the same emulator goes first: without binfmt_misc the
 * kernel cannot exec the program itself.
 */
export function selfCommand(argv: readonly string[], execPath: string, emulator?: string): string[] {
  const script = argv[1];
  const self = script === undefined || script.startsWith('/$bunfs/') ? [execPath] : [execPath, script];
  return emulator === undefined ? self : [emulator, ...self];
}
