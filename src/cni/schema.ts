// A small validator for JSON input (the network config, state records). A
// schema checks a value and returns it typed, or records what is wrong, each
// problem with the path of its field. It replaces zod/mini, whose import alone
// cost every ADD, DEL and CHECK 3–5 ms and up to 6 MiB (see README, design).
import type { PathSegment } from './field-path';

/** One bad field: where it is, and what it must be. */
export interface Issue {
  path: PathSegment[];
  message: string;
}

/** Checks `value` at `path`; returns it typed, or pushes issues (the return value is then meaningless). */
export type Schema<T> = (value: unknown, path: readonly PathSegment[], issues: Issue[]) => T;

/** A schema whose value may be absent. */
export type OptionalSchema<T> = Schema<T | undefined> & { readonly optional: true };

/** The type a schema checks for. */
export type Infer<S> = S extends Schema<infer T> ? T : never;

/** An object shape: a schema per known key. */
export type Shape = Record<string, Schema<unknown>>;

type OptionalKeys<S extends Shape> = { [K in keyof S]: S[K] extends { optional: true } ? K : never }[keyof S];

/** The checked object of a shape: absent optional keys stay absent, unknown keys are kept. */
export type ShapeOf<S extends Shape> = { [K in Exclude<keyof S, OptionalKeys<S>>]: Infer<S[K]> } & {
  [K in OptionalKeys<S>]?: Exclude<Infer<S[K]>, undefined>;
};

/** The value, or the issues found in it. */
export type Checked<T> = { ok: true; value: T } | { ok: false; issues: Issue[] };

/** Runs a schema on a whole document. */
export function check<T>(schema: Schema<T>, value: unknown): Checked<T> {
  const issues: Issue[] = [];
  const out = schema(value, [], issues);
  return issues.length === 0 ? { ok: true, value: out } : { ok: false, issues };
}

/** A schema for values `accept` takes; `message` says what they must be. */
export function accepting<T>(accept: (v: unknown) => v is T, message: string): Schema<T> {
  return (value, path, issues) => {
    if (!accept(value)) issues.push({ path: [...path], message });
    return value as T;
  };
}

/** `base`, then each check in turn until one fails: a check returns the problem, or undefined. */
export function refined<T>(base: Schema<T>, ...checks: ((v: T) => string | undefined)[]): Schema<T> {
  return (value, path, issues) => {
    const before = issues.length;
    const out = base(value, path, issues);
    if (issues.length > before) return out;
    for (const problem of checks) {
      const message = problem(out);
      if (message !== undefined) {
        issues.push({ path: [...path], message });
        break;
      }
    }
    return out;
  };
}

/** `schema`, or nothing. */
export function optional<T>(schema: Schema<T>): OptionalSchema<T> {
  const run: Schema<T | undefined> = (value, path, issues) => (value === undefined ? undefined : schema(value, path, issues));
  return Object.assign(run, { optional: true as const });
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** An object with `shape`'s keys; unknown keys are tolerated, and kept as they are unless `unknownKeys` is 'drop'. */
export function looseObject<S extends Shape>(shape: S, message: string, unknownKeys: 'keep' | 'drop' = 'keep'): Schema<ShapeOf<S> & Record<string, unknown>> {
  const keys = Object.keys(shape);
  return (value, path, issues) => {
    if (!isPlainObject(value)) {
      issues.push({ path: [...path], message });
      return value as never;
    }
    const out: Record<string, unknown> = unknownKeys === 'keep' ? { ...value } : {};
    for (const key of keys) {
      const checked = shape[key]!(value[key], [...path, key], issues);
      if (checked !== undefined) out[key] = checked;
    }
    return out as never;
  };
}

/** An array of `item`s, every bad one reported. */
export function arrayOf<T>(item: Schema<T>, message: string): Schema<T[]> {
  return (value, path, issues) => {
    if (!Array.isArray(value)) {
      issues.push({ path: [...path], message });
      return value as never;
    }
    return value.map((v, i) => item(v, [...path, i], issues));
  };
}

/** One of `values`. */
export function oneOf<const T extends readonly string[]>(values: T, message: string): Schema<T[number]> {
  return accepting((v): v is T[number] => typeof v === 'string' && values.includes(v), message);
}

/** A string. */
export const isString = (v: unknown): v is string => typeof v === 'string';
/** true or false. */
export const isBoolean = (v: unknown): v is boolean => typeof v === 'boolean';
/** A finite number. */
export const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** A safe integer from min to max. */
export function intFrom(min: number, max: number, message: string): Schema<number> {
  return accepting((v): v is number => Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max, message);
}

/** A finite number from min to max. */
export function numberFrom(min: number, max: number, message: string): Schema<number> {
  return accepting((v): v is number => isNumber(v) && v >= min && v <= max, message);
}

// Schemas with the stock messages, shared by the config's and the state records' schemas.

/** A string. */
export const str = () => accepting(isString, 'must be a string');
/** An object that keeps unknown keys. */
export const obj = <S extends Shape>(shape: S) => looseObject(shape, 'must be an object');
/** An array of `item`s. */
export const list = <T>(item: Schema<T>) => arrayOf(item, 'must be an array');
/** A safe integer from min to max. */
export const intRange = (min: number, max: number) => intFrom(min, max, `must be an integer from ${min} to ${max}`);
/** One of `values`; the message lists them, each between `quote`s (e.g. `must be one of "a", "b"`). */
export const choice = <const T extends readonly string[]>(values: T, quote = '') =>
  oneOf(values, `must be one of ${values.map((v) => `${quote}${v}${quote}`).join(', ')}`);
