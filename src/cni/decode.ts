// Turns stdin's bytes into the network config object, within limits that keep a
// hostile or broken runtime from exhausting the plugin: the size is bounded by the
// reader (MAX_STDIN_BYTES), the nesting here, before JSON.parse and before anything
// recursive (structuredClone, JSON.stringify of the reply) can overflow the stack.
import { CniError, describeValue, ErrorCode } from './errors';

/** The most stdin bytes a command reads: a larger config is refused with code 5. */
export const MAX_STDIN_BYTES = 16 * 1024 * 1024;

/** The deepest nesting of JSON arrays and objects accepted on stdin (code 6 beyond). */
export const MAX_JSON_DEPTH = 64;

/** The error for a stdin of more than MAX_STDIN_BYTES bytes. */
export function stdinTooLarge(): CniError {
  const limit = `${MAX_STDIN_BYTES / (1024 * 1024)} MiB (${MAX_STDIN_BYTES} bytes)`;
  return new CniError(ErrorCode.IoFailure, `stdin holds more than ${limit}, the most a network config may take`);
}

/**
 * Decodes the network config: UTF-8 JSON (or text already decoded), an object, at most MAX_JSON_DEPTH deep; throws
 * code 6 naming what is wrong. A leading byte order mark is dropped either way.
 */
export function decodeConfig(input: Uint8Array | string): Record<string, unknown> {
  const fail = (what: string, cause?: unknown) =>
    new CniError(ErrorCode.DecodeFailure, `stdin ${what}`, cause === undefined ? undefined : { cause });
  let text: string;
  try {
    text =
      typeof input === 'string'
        ? input.replace(/^\uFEFF/, '')
        : new TextDecoder('utf-8', { fatal: true }).decode(input);
  } catch (e) {
    throw fail('is not valid UTF-8: expected the network config as JSON', e);
  }
  if (text.trim() === '') throw fail('is empty: expected the network config as JSON');
  if (nestingExceeds(text, MAX_JSON_DEPTH)) {
    throw fail(`nests JSON arrays and objects more than ${MAX_JSON_DEPTH} levels deep, the most a network config may`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw fail(`is not JSON: ${e instanceof Error ? e.message : String(e)}`, e);
  }
  if (!isJsonObject(value)) throw fail(`is not a JSON object (got ${describeValue(value)})`);
  return value;
}

/** Whether a JSON value is an object: not null, not an array. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Whether `[` and `{` outside strings nest deeper than `max` in `text`: one linear pass without recursion, on text that
 * need not be valid JSON.
 */
export function nestingExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
