// zod/mini schemas with the project's stock messages, and a check that returns what is wrong
// field by field. Each schema carries its expectation as the message of every issue it can
// raise, so that a problem reads `"<path>" <expectation> (got <value>)` (fieldProblem, errors.ts).
// zod/mini, not zod's classic API: it loads in less time and memory (docs/performance.md). Loaded
// by the announcer and the verbs, and by a CNI call only to report a config it cannot forward
// (src/main.ts, dispatch on what the shim would not forward); never by VERSION nor on the shim's path
// (test/integration/schema-and-zod.test.ts).
import { z } from 'zod/mini';
import { ifnameProblem } from './env';
import type { PathSegment } from './errors';

/** Any zod/mini schema. */
export type AnySchema = z.ZodMiniType;

/** One bad field: where it is, and what it must be. */
export type Issue = { path: PathSegment[]; message: string };

/** The value, or the issues found in it: the first per field, in the order of the schema's keys. */
export type Checked<T> = { ok: true; value: T } | { ok: false; issues: Issue[] };

/** Runs `schema` on a whole document. */
export function check<S extends AnySchema>(schema: S, value: unknown): Checked<z.output<S>> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  // A field that fails two checks (an integer out of range and unsafe) is named once: by its first issue.
  const byPath = new Map<string, Issue>();
  for (const issue of parsed.error.issues) {
    const path = issue.path.map((seg) => (typeof seg === 'number' ? seg : String(seg)));
    const key = JSON.stringify(path);
    if (!byPath.has(key)) byPath.set(key, { path, message: issue.message });
  }
  return { ok: false, issues: [...byPath.values()] };
}

/** `{ error }` for every issue of a schema or a check. */
const says = (message: string) => ({ error: message });

/** A string. */
export const str = (message = 'must be a string') => z.string(says(message));
/** true or false. */
export const bool = () => z.boolean(says('must be true or false'));
/** An object that keeps unknown keys. */
export const obj = <S extends z.core.$ZodLooseShape>(shape: S) => z.looseObject(shape, says('must be an object'));
/** An object that drops unknown keys. */
export const strictShape = <S extends z.core.$ZodLooseShape>(shape: S) => z.object(shape, says('must be an object'));
/** An array of `item`s. */
export const list = <T extends AnySchema>(item: T) => z.array(item, says('must be an array'));
/** An array of at most `max` `item`s. */
export const listOf = <T extends AnySchema>(item: T, max: number) =>
  list(item).check(z.maxLength(max, says(`must have at most ${max} entries`)));
/** A safe integer from min to max (`message` by default says so). */
export const intRange = (min: number, max: number, message = `must be an integer from ${min} to ${max}`) =>
  z.int(says(message)).check(z.minimum(min, says(message)), z.maximum(max, says(message)));
/** A finite number from min to max. */
export const numRange = (min: number, max: number, message = `must be a number from ${min} to ${max}`) =>
  z.number(says(message)).check(z.minimum(min, says(message)), z.maximum(max, says(message)));
/** One of `values`; the message lists them, each between `quote`s (e.g. `must be one of "a", "b"`). */
export const choice = <const T extends readonly [string, ...string[]]>(values: T, quote = '') =>
  z.enum(values, says(`must be one of ${values.map((v) => `${quote}${v}${quote}`).join(', ')}`));
/** A string starting with "/". */
export const absPath = () =>
  z.string(says('must be an absolute path')).check(z.regex(/^\//, says('must be an absolute path')));
/** A Linux interface name; `message` replaces ifnameProblem's own text. */
export const ifname = (message?: string) =>
  str().check(
    z.refine((s: string) => ifnameProblem(s) === undefined, {
      error: (iss) => message ?? ifnameProblem(String(iss.input)),
    }),
  );
/** A string that is not empty. */
export const nonEmpty = () => str().check(z.minLength(1, says('must not be empty')));
