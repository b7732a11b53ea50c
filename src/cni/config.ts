import * as z from 'zod/mini';
import { CniError, ErrorCode } from './errors';
import { describeValue, fieldProblem, valueAt, type PathSegment } from './field-path';
import { ifnameProblem } from './ifname';

export { resolveOptions, type AnnounceOptions } from './options';

/** ARP opcode(s) of the IPv4 announcement. */
export type ArpOp = 'request' | 'reply' | 'both';
/** Whether the pod interface keeps its MAC or gets the one derived from its first IP. */
export type MacMode = 'keep' | 'ip-derived';
/** The lowest level written to logFile. */
export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

/** Options that `args.cni.announce` may set for one attachment. `enabled: false` opts out while still overriding the rest. */
export interface AnnounceOverrides {
  enabled?: boolean;
  ipv4?: boolean;
  ipv6?: boolean;
  arpOp?: ArpOp;
  mac?: MacMode;
  macPrefix?: string;
  count?: number;
  intervalMs?: number;
  backoff?: number;
}

/** One live attachment named by GC. */
export interface Attachment {
  containerId: string;
  ifname: string;
}

/** The network config from stdin, validated, with defaults applied. */
export interface PluginConfig {
  cniVersion: string;
  name: string;
  type: string;
  ipv4: boolean;
  ipv6: boolean;
  arpOp: ArpOp;
  interfaces?: string[];
  mac: MacMode;
  macPrefix: string;
  count: number;
  intervalMs: number;
  backoff: number;
  addWaitMs: number;
  readyTimeoutMs: number;
  stateDir: string;
  logFile?: string;
  logLevel: LogLevel;
  /** The previous plugin's result, unvalidated: see parsePrevResult. */
  prevResult?: unknown;
  /** Capability args from the runtime; `mac` is present only with `"capabilities": {"mac": true}`. */
  runtimeConfig?: { mac?: string; [key: string]: unknown };
  /** Per-attachment args (Multus puts a pod's cni-args in `args.cni`). */
  args?: { cni?: { announce?: boolean | AnnounceOverrides; [key: string]: unknown }; [key: string]: unknown };
  /** GC's live attachments: the union of `cni.dev/valid-attachments` and `cni.dev/attachments`; absent when neither is given. */
  validAttachments?: Attachment[];
  /** The whole config as received, unknown fields included. */
  raw: Readonly<Record<string, unknown>>;
}

/** Defaults of the plugin's options. */
export const DEFAULTS = {
  ipv4: true,
  ipv6: true,
  arpOp: 'request',
  mac: 'keep',
  macPrefix: '0a:58',
  count: 3,
  intervalMs: 1000,
  backoff: 1,
  addWaitMs: 2000,
  readyTimeoutMs: 60000,
  stateDir: '/run/cni-announcer',
  logLevel: 'info',
} as const satisfies Partial<PluginConfig>;

/** The GC attachment list keys: the 1.1.0 spec text's and the one runtimes send as well. */
export const ATTACHMENT_KEYS = ['cni.dev/valid-attachments', 'cni.dev/attachments'] as const;

// Every schema carries its expectation as the issue message, so that issues read as
// `"<path>" <expectation> (got <value>)`.
const bool = () => z.boolean({ error: 'must be true or false' });
const str = () => z.string({ error: 'must be a string' });
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
const obj = <T extends z.core.$ZodLooseShape>(shape: T) => z.looseObject(shape, { error: 'must be an object' });
const list = <T extends z.core.SomeType>(item: T) => z.array(item, { error: 'must be an array' });

/** The options a per-attachment override may set, shared with the top level. */
const OVERRIDABLE = {
  ipv4: z.optional(bool()),
  ipv6: z.optional(bool()),
  arpOp: z.optional(oneOf(['request', 'reply', 'both'])),
  mac: z.optional(oneOf(['keep', 'ip-derived'])),
  macPrefix: z.optional(macPrefix()),
  count: z.optional(intRange(0, 10)),
  intervalMs: z.optional(intRange(10, 60000)),
  backoff: z.optional(numRange(1, 4)),
};

const attachment = obj({ containerID: str(), ifname: str() });

const configSchema = obj({
  cniVersion: str(),
  name: str(),
  type: str(),
  ...OVERRIDABLE,
  interfaces: z.optional(list(ifname())),
  addWaitMs: z.optional(intRange(0, 30000)),
  readyTimeoutMs: z.optional(intRange(0, 600000)),
  stateDir: z.optional(absPath()),
  logFile: z.optional(absPath()),
  logLevel: z.optional(oneOf(['error', 'warn', 'info', 'debug'])),
  runtimeConfig: z.optional(obj({ mac: z.optional(str()) })),
  args: z.optional(obj({ cni: z.optional(obj({ announce: z.optional(z.unknown()) })) })),
  [ATTACHMENT_KEYS[0]]: z.optional(list(attachment)),
  [ATTACHMENT_KEYS[1]]: z.optional(list(attachment)),
});

const overridesSchema = obj({ enabled: z.optional(bool()), ...OVERRIDABLE });

/** Plugin-wide options that cannot be set per attachment: naming one in `args.cni.announce` is an error rather than silently ignored. */
const NOT_OVERRIDABLE = ['interfaces', 'addWaitMs', 'readyTimeoutMs', 'stateDir', 'logFile', 'logLevel'] as const;

const ANNOUNCE_PATH = ['args', 'cni', 'announce'] as const;

/**
 * Validates the network config and applies defaults. Unknown fields are tolerated (kept in
 * `raw`). Throws one CniError (code 7) naming every bad field, e.g.
 * `invalid config: "count" must be an integer from 0 to 10 (got 11)`.
 */
export function parseConfig(raw: unknown): PluginConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw configError([`the network config must be a JSON object (got ${describeValue(raw)})`]);
  }
  const parsed = configSchema.safeParse(raw);
  const problems = parsed.success ? [] : issueTexts(parsed.error.issues, raw, []);
  const announceRaw = valueAt(raw, ANNOUNCE_PATH);
  let announce: boolean | AnnounceOverrides | undefined;
  if (announceRaw !== undefined) {
    const result = parseAnnounce(announceRaw);
    if (result.ok) announce = result.value;
    else problems.push(...result.problems);
  }
  if (!parsed.success || problems.length > 0) throw configError(problems);

  const d = parsed.data;
  const config: PluginConfig = {
    cniVersion: d.cniVersion,
    name: d.name,
    type: d.type,
    ipv4: d.ipv4 ?? DEFAULTS.ipv4,
    ipv6: d.ipv6 ?? DEFAULTS.ipv6,
    arpOp: d.arpOp ?? DEFAULTS.arpOp,
    mac: d.mac ?? DEFAULTS.mac,
    macPrefix: d.macPrefix ?? DEFAULTS.macPrefix,
    count: d.count ?? DEFAULTS.count,
    intervalMs: d.intervalMs ?? DEFAULTS.intervalMs,
    backoff: d.backoff ?? DEFAULTS.backoff,
    addWaitMs: d.addWaitMs ?? DEFAULTS.addWaitMs,
    readyTimeoutMs: d.readyTimeoutMs ?? DEFAULTS.readyTimeoutMs,
    stateDir: d.stateDir ?? DEFAULTS.stateDir,
    logLevel: d.logLevel ?? DEFAULTS.logLevel,
    raw: raw as Record<string, unknown>,
  };
  if (d.interfaces !== undefined) config.interfaces = d.interfaces;
  if (d.logFile !== undefined) config.logFile = d.logFile;
  if ('prevResult' in raw) config.prevResult = (raw as { prevResult?: unknown }).prevResult;
  if (d.runtimeConfig !== undefined) config.runtimeConfig = d.runtimeConfig;
  if (d.args !== undefined) {
    const { cni, ...rest } = d.args;
    config.args = cni === undefined ? rest : { ...rest, cni: withAnnounce(cni, announce) };
  }
  const lists = ATTACHMENT_KEYS.map((k) => d[k]).filter((l) => l !== undefined);
  if (lists.length > 0) config.validAttachments = mergeAttachments(lists.flat());
  return config;
}

function withAnnounce(
  cni: Record<string, unknown>,
  announce: boolean | AnnounceOverrides | undefined,
): NonNullable<NonNullable<PluginConfig['args']>['cni']> {
  const { announce: _ignored, ...rest } = cni;
  return announce === undefined ? rest : { ...rest, announce };
}

function parseAnnounce(
  value: unknown,
): { ok: true; value: boolean | AnnounceOverrides } | { ok: false; problems: string[] } {
  if (typeof value === 'boolean') return { ok: true, value };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, problems: [fieldProblem(ANNOUNCE_PATH, 'must be true, false or an object of option overrides', value)] };
  }
  const problems = NOT_OVERRIDABLE.filter((k) => k in value).map(
    (k) =>
      `"${ANNOUNCE_PATH.join('.')}.${k}" cannot be set per attachment (allowed: enabled, ${Object.keys(OVERRIDABLE).join(', ')})`,
  );
  const parsed = overridesSchema.safeParse(value);
  if (!parsed.success) problems.push(...issueTexts(parsed.error.issues, value, ANNOUNCE_PATH));
  if (!parsed.success || problems.length > 0) return { ok: false, problems };
  const overrides: AnnounceOverrides = {};
  for (const key of ['enabled', ...Object.keys(OVERRIDABLE)] as (keyof AnnounceOverrides)[]) {
    if (parsed.data[key] !== undefined) Object.assign(overrides, { [key]: parsed.data[key] });
  }
  return { ok: true, value: overrides };
}

function mergeAttachments(entries: readonly { containerID: string; ifname: string }[]): Attachment[] {
  const seen = new Map<string, Attachment>();
  for (const e of entries) {
    seen.set(`${e.containerID}\u0000${e.ifname}`, { containerId: e.containerID, ifname: e.ifname });
  }
  return [...seen.values()];
}

function issueTexts(
  issues: readonly z.core.$ZodIssue[],
  doc: unknown,
  prefix: readonly PathSegment[],
): string[] {
  return issues.map((issue) => {
    const path = issue.path.filter((p): p is PathSegment => typeof p !== 'symbol');
    return fieldProblem([...prefix, ...path], issue.message, valueAt(doc, path));
  });
}

function configError(problems: readonly string[]): CniError {
  return new CniError(ErrorCode.InvalidConfig, `invalid config: ${problems.join('; ')}`);
}
