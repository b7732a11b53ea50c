// The plugin's options, each declared once: its zod schema carries its type, its range and the
// text of its error message. config.ts builds the config schema from these shapes, and the option
// types below are derived from them.
import * as z from 'zod/mini';
import { fieldProblem, valueAt, type PathSegment } from './field-path';
import { ifnameProblem } from './ifname';

// Every schema carries its expectation as the issue message, so that issues read as
// `"<path>" <expectation> (got <value>)`.
const bool = () => z.boolean({ error: 'must be true or false' });
/** A string, with the message every config issue uses. */
export const str = () => z.string({ error: 'must be a string' });
const oneOf = <const T extends readonly string[]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.map((v) => `"${v}"`).join(', ')}` });
const intRange = (min: number, max: number) => {
  const error = `must be an integer from ${min} to ${max}`;
  return z.int({ error }).check(z.gte(min, { error }), z.lte(max, { error }));
};
const numRange = (min: number, max: number) => {
  const error = `must be a number from ${min} to ${max}`;
  return z.number({ error }).check(z.gte(min, { error }), z.lte(max, { error }));
};
const absPath = () => {
  const error = 'must be an absolute path';
  return z.string({ error }).check(z.refine((s) => s.startsWith('/'), { error }));
};
const macPrefix = () =>
  str().check(
    z.refine((s) => /^[0-9a-fA-F]{2}:[0-9a-fA-F]{2}$/.test(s), {
      error: 'must be two hex bytes such as "0a:58"',
      abort: true,
    }),
    z.refine((s) => (parseInt(s.slice(0, 2), 16) & 1) === 0, {
      error: 'must not have the multicast bit (0x01 of the first byte) set',
    }),
  );
const ifname = () =>
  str().check(
    z.superRefine((s, ctx) => {
      const problem = ifnameProblem(s);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, input: s });
    }),
  );
/** An object that keeps unknown keys. */
export const obj = <T extends z.core.$ZodLooseShape>(shape: T) => z.looseObject(shape, { error: 'must be an object' });
/** An array, with the message every config issue uses. */
export const list = <T extends z.core.SomeType>(item: T) => z.array(item, { error: 'must be an array' });

const ARP_OPS = ['request', 'reply', 'both'] as const;
const MAC_MODES = ['keep', 'ip-derived'] as const;
const CONFLICT_CHECKS = ['off', 'warn', 'fail'] as const;
/** The log levels, most severe first. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;

/** ARP opcode(s) of the IPv4 announcement. */
export type ArpOp = (typeof ARP_OPS)[number];
/** Whether the pod interface keeps its MAC or gets the one derived from its first IP. */
export type MacMode = (typeof MAC_MODES)[number];
/** The lowest level written to logFile. */
export type LogLevel = (typeof LOG_LEVELS)[number];
/** What an IPv4 address another host answers for does: nothing (no probe), skip it with a warning, or fail ADD. */
export type ConflictCheck = (typeof CONFLICT_CHECKS)[number];

/** The options a per-attachment override (`args.cni.announce`) may set, also set at the top level. */
export const OVERRIDABLE = {
  ipv4: z.optional(bool()),
  ipv6: z.optional(bool()),
  arpOp: z.optional(oneOf(ARP_OPS)),
  mac: z.optional(oneOf(MAC_MODES)),
  macPrefix: z.optional(macPrefix()),
  count: z.optional(intRange(0, 10)),
  intervalMs: z.optional(intRange(10, 60000)),
  backoff: z.optional(numRange(1, 4)),
  probeMs: z.optional(intRange(10, 2000)),
  probes: z.optional(intRange(1, 3)),
};

/** An option `args.cni.announce` may name, besides `enabled`. */
export type OverridableField = keyof typeof OVERRIDABLE;

/** The fields of an `args.cni.announce` object: `enabled` (opt out) and the overridable options. */
export const OVERRIDE_SHAPE = { enabled: z.optional(bool()), ...OVERRIDABLE };

/** What `args.cni.announce` may set for one attachment, as validated. */
export type AnnounceOverrides = { [K in keyof typeof OVERRIDE_SHAPE]?: NonNullable<z.output<(typeof OVERRIDE_SHAPE)[K]>> };

/**
 * What `podOverrides` may list: an overridable option, which a pod may then set to any valid
 * value, or one of the two restricted forms, which allow only that value.
 */
export const POD_OVERRIDE_TOKENS = [
  'enabled=false',
  'mac=keep',
  ...(Object.keys(OVERRIDABLE) as OverridableField[]),
] as const satisfies readonly string[];

/** One entry of `podOverrides`. */
export type PodOverride = (typeof POD_OVERRIDE_TOKENS)[number];

/** Options that only the conflist sets: naming one in `args.cni.announce` is ignored (and logged). */
export const PLUGIN_WIDE = {
  interfaces: z.optional(list(ifname())),
  addWaitMs: z.optional(intRange(0, 30000)),
  readyTimeoutMs: z.optional(intRange(0, 600000)),
  conflictCheck: z.optional(oneOf(CONFLICT_CHECKS)),
  stateDir: z.optional(absPath()),
  logFile: z.optional(absPath()),
  logLevel: z.optional(oneOf(LOG_LEVELS)),
  podOverrides: z.optional(list(oneOf(POD_OVERRIDE_TOKENS))),
  rateLimit: z.optional(obj({ framesPerSecond: intRange(1, 10000), burst: intRange(1, 10000) })),
  idleExitMs: z.optional(intRange(100, 3600000)),
  metricsFile: z.optional(absPath()),
};

/** The texts of zod issues found in `doc`, each naming its field under `prefix`. */
export function issueTexts(issues: readonly z.core.$ZodIssue[], doc: unknown, prefix: readonly PathSegment[]): string[] {
  return issues.map((issue) => {
    const path = issue.path.filter((p): p is PathSegment => typeof p !== 'symbol');
    return fieldProblem([...prefix, ...path], issue.message, valueAt(doc, path));
  });
}
