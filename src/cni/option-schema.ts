// The plugin's options, each declared once, in OPTIONS: its schema (type, range and the text
// of its error message), its default, and who may set it. The config's types, its defaults,
// what a pod may override and what an attachment's options hold are all derived from it.
import type { z } from 'zod/mini';
import { _default, optional, regex } from 'zod/mini';
import {
  DEFAULT_ADD_WAIT_MS,
  DEFAULT_GATEWAY_CHECK_MS,
  DEFAULT_PROBE_MS,
  DEFAULT_STATE_DIR,
  MAX_GATEWAY_CHECK_MS,
  MAX_PROBE_MS,
} from './option-bounds';
import {
  absPath,
  bool,
  choice as anyOf,
  ifname,
  intRange,
  list,
  numRange,
  str,
  strictShape,
  type AnySchema,
} from './zod-checks';

// Every schema carries its expectation as the issue message, so that issues read as
// `"<path>" <expectation> (got <value>)`.
// Quoted, like the `(got "…")` that follows them.
const choice = <const T extends readonly [string, ...string[]]>(values: T) => anyOf(values, '"');
// Two patterns, not a function, so that the JSON Schema (announcer schema) carries them too; a
// prefix that fails both is named by the first (check keeps one issue per field).
const macPrefix = () =>
  str().check(
    regex(/^[0-9a-fA-F]{2}:[0-9a-fA-F]{2}$/, { error: 'must be two hex bytes such as "0a:58"' }),
    regex(/^.[02468aceACE]/, { error: 'must not have the multicast bit (0x01 of the first byte) set' }),
  );

/** The log levels, most severe first. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;

/** The lowest level written to logFile. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Who may set an option:
 * - `pod`: the conflist, and a pod's `args.cni.announce` where podOverrides allows;
 * - `attachment`: the conflist only; it is part of each attachment's options;
 * - `network`: the conflist only; it concerns the network (its stateDir, its log, what its pods may change);
 * - `node`: the node's announcer alone (its flags, over `announcer.conf` in stateDir: node-settings.ts). Found in a
 *   conflist, it is accepted, not validated, and not applied: the announcer logs where to set it instead.
 */
export type OptionScope = 'pod' | 'attachment' | 'network' | 'node';

/** One option: its scope, its schema and its default (none: the option may be absent). */
const option = <Z extends AnySchema, S extends OptionScope, D extends z.output<Z> | undefined = undefined>(
  scope: S,
  schema: Z,
  fallback?: D,
) => ({ scope, schema, fallback: fallback as D });

/** The options a pod may override (`args.cni.announce`), where podOverrides allows. */
const POD_OPTIONS = {
  ipv4: option('pod', bool(), true),
  ipv6: option('pod', bool(), true),
  arpOp: option('pod', choice(['request', 'reply', 'both']), 'request'),
  mac: option('pod', choice(['keep', 'ip-derived']), 'keep'),
  macPrefix: option('pod', macPrefix(), '0a:58'),
  count: option('pod', intRange(0, 10), 3),
  intervalMs: option('pod', intRange(10, 60000), 1000),
  backoff: option('pod', numRange(1, 4), 1),
  probeMs: option('pod', intRange(10, MAX_PROBE_MS), DEFAULT_PROBE_MS),
  probes: option('pod', intRange(1, 3), 2),
  gatewayCheck: option('pod', choice(['off', 'report', 'require']), 'report'),
  gatewayCheckMs: option('pod', intRange(50, MAX_GATEWAY_CHECK_MS), DEFAULT_GATEWAY_CHECK_MS),
};

/** An option `args.cni.announce` may name, besides `enabled`. */
export type OverridableField = keyof typeof POD_OPTIONS;

/**
 * What `podOverrides` may list: an overridable option (any valid value), or a restricted form allowing only that value.
 */
export const POD_OVERRIDE_TOKENS = [
  'enabled=false',
  'mac=keep',
  ...(Object.keys(POD_OPTIONS) as OverridableField[]),
] as const;

/** One entry of `podOverrides`. */
export type PodOverride = (typeof POD_OVERRIDE_TOKENS)[number];

/** Every option of the conflist. */
export const OPTIONS = {
  ...POD_OPTIONS,
  interfaces: option('attachment', list(ifname())),
  addWaitMs: option('attachment', intRange(0, 30000), DEFAULT_ADD_WAIT_MS),
  readyTimeoutMs: option('attachment', intRange(0, 600000), 60000),
  conflictCheck: option('attachment', choice(['off', 'warn', 'fail']), 'off'),
  onUnavailable: option('attachment', choice(['fail', 'skip']), 'fail'),
  stateDir: option('network', absPath(), DEFAULT_STATE_DIR),
  logFile: option('network', absPath()),
  logLevel: option('network', choice(LOG_LEVELS), 'info'),
  // By default a pod may only turn announcing off and keep its MAC (live-migration targets need both).
  podOverrides: option('network', list(choice(POD_OVERRIDE_TOKENS)), ['enabled=false', 'mac=keep'] as PodOverride[]),
  rateLimit: option('node', strictShape({ framesPerSecond: intRange(1, 10000), burst: intRange(1, 10000) })),
  idleExitMs: option('node', intRange(100, 3600000), 30000),
  metricsFile: option('node', absPath()),
};

type Options = typeof OPTIONS;
type OptionKey = keyof Options;
/** The value of option `K`, as its schema gives it. */
export type OptionValue<K extends OptionKey> = z.output<Options[K]['schema']>;
type KeysWith<Cond> = { [K in OptionKey]: Options[K] extends Cond ? K : never }[OptionKey];
type Defaulted = Exclude<OptionKey, KeysWith<{ fallback: undefined }>>;
/** The values of the options `K`: those with a default always there, the others optional. */
export type OptionValues<K extends OptionKey> = { [P in K & Defaulted]: OptionValue<P> } & {
  [P in Exclude<K, Defaulted>]?: OptionValue<P>;
};

/** The options of the node's announcer: idleExitMs, metricsFile, rateLimit. */
export type NodeOptionKey = KeysWith<{ scope: 'node' }>;
/** The options a conflist sets (every scope but node). */
type ConflistKey = Exclude<OptionKey, NodeOptionKey>;
/** The options of a checked config: those with a default are always there; node options are none of its. */
export type PluginOptions = OptionValues<ConflistKey>;
/** The options that are part of an attachment's options (scope pod or attachment). */
export type AttachmentOptionKey = KeysWith<{ scope: 'pod' | 'attachment' }>;

/** The keys of OPTIONS whose scope is in `scopes`, in table order. */
export function optionKeys<S extends OptionScope>(...scopes: S[]): KeysWith<{ scope: S }>[] {
  return (Object.keys(OPTIONS) as OptionKey[]).filter((k) =>
    (scopes as OptionScope[]).includes(OPTIONS[k].scope),
  ) as never;
}

/** What `args.cni.announce` may set for one attachment, as validated. */
export type AnnounceOverrides = { enabled?: boolean } & { [K in OverridableField]?: OptionValue<K> };

/**
 * The options a conflist sets, as fields of an object schema, in table order: each may be absent, and its default then
 * applies. Node options are left out: in a conflist they are unknown fields, tolerated.
 */
export function optionFields(): Record<ConflistKey, AnySchema> {
  const fields = {} as Record<ConflistKey, AnySchema>;
  for (const key of optionKeys('pod', 'attachment', 'network')) {
    const { schema, fallback }: { schema: AnySchema; fallback: unknown } = OPTIONS[key];
    // A fresh copy each time: a parsed config's podOverrides is its own.
    const copy = () => (Array.isArray(fallback) ? [...fallback] : fallback) as never;
    fields[key] = fallback === undefined ? optional(schema) : _default(schema, copy);
  }
  return fields;
}
