// Assertions on what a plugin printed (with vitest's expect, like hooks.ts).
import { expect } from 'vitest';
import type { CniOutput } from './cni';

/** The keys the spec allows in an error object. */
const ERROR_KEYS = ['cniVersion', 'code', 'msg', 'details'];

/**
 * Asserts a CNI error reply: exit 1, one JSON object on one line of stdout with
 * only the spec's keys, `code`, a msg naming each of `mentions`, a cniVersion
 * that is (one of) `cniVersion` when given, and no stack trace or source
 * location on stdout or stderr. Returns the object.
 */
export function expectCniError(
  out: CniOutput,
  code: number,
  mentions: readonly string[] = [],
  cniVersion?: string | readonly string[],
): { cniVersion: string; code: number; msg: string } {
  const why = `stdout: ${out.stdout.slice(0, 2000)} stderr: ${out.stderr.slice(0, 2000)}`;
  expect(out.code, why).toBe(1);
  const lines = out.stdout.trim().split('\n');
  expect(lines, why).toHaveLength(1);
  const doc = JSON.parse(lines[0]!);
  expect(doc !== null && typeof doc === 'object' && !Array.isArray(doc), why).toBe(true);
  expect(
    Object.keys(doc).every((k) => ERROR_KEYS.includes(k)),
    why,
  ).toBe(true);
  expect(doc.code, why).toBe(code);
  expect(typeof doc.msg, why).toBe('string');
  for (const m of mentions) expect(doc.msg, why).toContain(m);
  if (cniVersion !== undefined)
    expect(typeof cniVersion === 'string' ? [cniVersion] : cniVersion, why).toContain(doc.cniVersion);
  for (const stream of [out.stdout, out.stderr]) {
    expect(stream).not.toContain('    at ');
    expect(stream).not.toContain('Error:');
    expect(stream).not.toMatch(/\.(ts|js):\d+/);
  }
  return doc;
}
