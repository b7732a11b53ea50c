// The top level of a root script on the integration harness (`make demo`,
// `make bench`): one Scope for everything it creates, closed on return, on
// failure and on SIGINT/SIGTERM/SIGHUP, and the process's exit status.
import { constants as osConstants } from 'node:os';
import { CleanupError, Scope } from '../../test/integration/harness/scope';

/** What a script's body gets: its scope, and a signal that aborts when the user stops it. */
export type ScriptBody = (scope: Scope, abort: AbortSignal) => Promise<number | void>;

/**
 * Runs body and always closes its scope. The exit status is body's (0 when it
 * returns nothing), 1 after an error or a failed cleanup step, 128+n after
 * signal n. A signal only aborts: body stops at its next check, then the
 * scope is undone; a second signal does not cut the cleanup short.
 */
export async function scopedMain(name: string, body: ScriptBody): Promise<void> {
  const scope = new Scope();
  const abort = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      process.stderr.write(
        `\n${name}: ${sig}: ${abort.signal.aborted ? 'still cleaning up' : 'stopping and cleaning up'}\n`,
      );
      abort.abort(sig);
    });
  }
  let status = 0;
  try {
    status = (await body(scope, abort.signal)) ?? 0;
  } catch (err) {
    // A Ctrl-C also kills the running child, whose failure may surface before the signal handler has run;
    // a failed cleanup step (body may close its scope itself) is reported all the same.
    await new Promise(setImmediate);
    const cleanupFailed = err instanceof AggregateError && err.errors.every((e) => e instanceof CleanupError);
    if (!abort.signal.aborted || cleanupFailed)
      process.stderr.write(`${name}: ${err instanceof Error ? err.message : String(err)}\n`);
    status = 1;
  } finally {
    const errors = await scope.close();
    for (const e of errors) process.stderr.write(`${name}: ${e.message}\n`);
    if (errors.length > 0 && status === 0) status = 1;
  }
  if (abort.signal.aborted) status = 128 + (osConstants.signals[abort.signal.reason as NodeJS.Signals] ?? 0);
  process.exitCode = status;
}
