// A scope owns the undo steps of everything a test created (namespaces, links,
// plugin attachments, captures). Steps run newest first, every one of them, even
// when an earlier one fails, so a failing test never leaks into the next run.

type Step = { label: string; fn: () => unknown };

/** One cleanup step that failed, labelled with what it was undoing. */
export class CleanupError extends Error {
  override name = 'CleanupError';

  constructor(
    readonly label: string,
    cause: unknown,
  ) {
    super(`cleanup "${label}" failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** Collects undo steps and runs them once, newest first, whatever fails. */
export class Scope {
  #steps: Step[] = [];
  #closed = false;

  /** Whether close() has started; a closed scope accepts no more steps. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Registers fn to run at close(), before every step registered earlier.
   * On a closed scope it runs fn at once (so nothing leaks) and throws.
   */
  defer(fn: () => unknown, label = fn.name || 'cleanup'): void {
    if (this.#closed) {
      void Promise.resolve()
        .then(fn)
        .catch(() => undefined);
      throw new Error(`scope already closed: "${label}" was undone at once`);
    }
    this.#steps.push({ label, fn });
  }

  /**
   * A scope of its own that the caller may close early (to undo one part
   * before the next begins); this scope closes it at its turn otherwise, and
   * its failures become this scope's.
   */
  child(label = 'child scope'): Scope {
    const child = new Scope();
    this.defer(async () => throwCleanupErrors(await child.close()), label);
    return child;
  }

  /** Runs every deferred step, newest first; never throws, resolves with the failures. */
  async close(): Promise<CleanupError[]> {
    this.#closed = true;
    const errors: CleanupError[] = [];
    for (let step = this.#steps.pop(); step; step = this.#steps.pop()) {
      try {
        await step.fn();
      } catch (err) {
        errors.push(new CleanupError(step.label, err));
      }
    }
    return errors;
  }
}

/** Throws one AggregateError for cleanup failures, if there are any. */
export function throwCleanupErrors(errors: readonly CleanupError[]): void {
  if (errors.length > 0) {
    throw new AggregateError(errors, errors.map((e) => e.message).join('; '));
  }
}

/**
 * Runs fn with a fresh scope and always closes it. fn's own error wins (cleanup
 * failures are attached to it as `cleanupErrors`); if fn succeeded, cleanup
 * failures are thrown together.
 */
export async function withScope<T>(fn: (scope: Scope) => Promise<T>): Promise<T> {
  const scope = new Scope();
  let result: T;
  try {
    result = await fn(scope);
  } catch (err) {
    const errors = await scope.close();
    if (errors.length > 0 && err instanceof Error) {
      Object.assign(err, { cleanupErrors: errors });
    }
    throw err;
  }
  throwCleanupErrors(await scope.close());
  return result;
}
