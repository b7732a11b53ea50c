// vitest wiring for Scope: one scope per test, closed after it.
import { afterAll, afterEach, beforeEach, expect } from 'vitest';
import { leftoversAfterTeardown } from './leftovers';
import { ownAnnouncerProcesses } from './processes';
import { Scope, throwCleanupErrors } from './scope';

/**
 * Gives each test of the enclosing describe a fresh Scope, closed in afterEach.
 * Cleanup failures fail the test next to (never instead of) its own error.
 * With `prefix` (the one every netns and link of the describe is named with),
 * after its last test no such netns or link may be left, nor any announcer
 * process this test process started.
 */
export function scopePerTest(prefix?: string): () => Scope {
  let current: Scope | undefined;
  beforeEach(() => {
    current = new Scope();
  });
  afterEach(async () => {
    const scope = current;
    current = undefined;
    if (scope) throwCleanupErrors(await scope.close());
  });
  if (prefix !== undefined) {
    afterAll(async () => {
      expect(await leftoversAfterTeardown(prefix)).toEqual([]);
      expect(await ownAnnouncerProcesses()).toEqual([]);
    });
  }
  return () => {
    if (!current) throw new Error('scopePerTest(): no test is running');
    return current;
  };
}
