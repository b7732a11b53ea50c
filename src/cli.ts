// The command-line verbs besides the CNI protocol (which runtimes drive with
// CNI_* variables and no arguments): `install` and `sleep`, for the DaemonSet.
import { writeSync } from 'node:fs';
import { install, INSTALL_VERB } from './commands/install';
import { sleepUntilSignal, SLEEP_VERB } from './commands/sleep';
import { dirProblem, installFile } from './sys/install-file';

/** The verbs runVerb handles. */
export const CLI_VERBS: readonly string[] = [INSTALL_VERB, SLEEP_VERB];

function line(fd: number, text: string): void {
  writeSync(fd, `${text}\n`);
}

/**
 * Runs `verb` with `args` and resolves with its exit status. `self` is the
 * running executable (the file that `install` copies).
 */
export async function runVerb(verb: string, args: readonly string[], self: string): Promise<number> {
  if (verb === INSTALL_VERB) {
    return install({ self, dirProblem, installFile, out: (t) => line(1, t), err: (t) => line(2, t) }, args);
  }
  if (args.length > 0) {
    line(2, `announcer ${SLEEP_VERB}: takes no arguments`);
    return 2;
  }
  await sleepUntilSignal({
    onSignal: (signal, handler) => process.once(signal, handler),
    keepAlive: () => {
      const timer = setInterval(() => undefined, 2 ** 31 - 1);
      return () => clearInterval(timer);
    },
  });
  return 0;
}
