/**
 * The argv prefix that starts this program again, for `[...prefix, verb, ...args]`:
 * the executable alone when it is a `bun build --compile` binary (its script is
 * inside it, at a virtual /$bunfs/ path in argv[1]), else the runtime and the
 * script (`node script.js`, as under unit tests).
 */
export function selfCommand(argv: readonly string[], execPath: string): string[] {
  const script = argv[1];
  return script === undefined || script.startsWith('/$bunfs/') ? [execPath] : [execPath, script];
}
