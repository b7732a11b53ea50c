// The CniError a CNI parser throws, for the tests of its refusals.
import { expect } from 'vitest';
import { CniError } from '../../src/cni/errors';

/**
 * The CniError `run` throws, of `code` when given; fails the test when it throws nothing or something else.
 * `errorClass` is the CniError of a module the test loaded afresh.
 */
export function cniError(run: () => unknown, code?: number, errorClass: typeof CniError = CniError): CniError {
  let thrown: unknown;
  try {
    run();
  } catch (e) {
    thrown = e;
  }
  expect(thrown).toBeInstanceOf(errorClass);
  if (code !== undefined) expect((thrown as CniError).code).toBe(code);
  return thrown as CniError;
}
