// vitest wiring for Scope: one scope per test, closed after it.
import { afterEach, beforeEach } from 'vitest';
import { Scope, throwCleanupErrors } from './scope';

/**
 * Gives each test of the enclosing describe a fresh Scope, closed in afterEach.
 * Cleanup failures fail the test next to (never instead of) its own error.
 */
export function scopePerTest(): () => Scope {
  let current: Scope | undefined;
  beforeEach(() => {
    current = new Scope();
  });
  afterEach(async () => {
    const scope = current;
    current = undefined;
    if (scope) throwCleanupErrors(await scope.close());
  });
  return () => {
    if (!current) throw new Error('scopePerTest(): no test is running');
    return current;
  };
}
