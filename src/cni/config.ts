import * as z from 'zod/mini';
import { burstSpanMs, MAX_BURST_SPAN_MS } from '../plan';
import { CniError, ErrorCode } from './errors';
import { describeValue, valueAt } from './field-path';
import {
  issueTexts,
  list,
  obj,
  OVERRIDABLE,
  PLUGIN_WIDE,
  str,
  type AnnounceOverrides,
  type ArpOp,
  type ConflictCheck,
  type LogLevel,
  type MacMode,
  type PodOverride,
} from './option-schema';
import { ANNOUNCE_PATH, applyPodOverrides, DEFAULT_POD_OVERRIDES, type PodAnnounce } from './pod-overrides';
import { listProblems } from './problems';

export type { AnnounceOverrides, ArpOp, ConflictCheck, LogLevel, MacMode, PodOverride } from './option-schema';
export type { PodAnnounce } from './pod-overrides';

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
  /** IPv4 conflict detection before announcing (RFC 5227 probe): off, warn or fail. */
  conflictCheck: ConflictCheck;
  /** The probe's listening window. */
  probeMs: number;
  /** ARP probes sent in the window. */
  probes: number;
  stateDir: string;
  logFile?: string;
  logLevel: LogLevel;
  /** What `args.cni.announce` may change (see applyPodOverrides). */
  podOverrides: PodOverride[];
  /** The node-wide frame budget of stateDir; absent: no limit. */
  rateLimit?: { framesPerSecond: number; burst: number };
  /** The background announcer exits after this long without work. */
  idleExitMs: number;
  /** Where the background announcer writes its counters (Prometheus text); absent: nowhere. */
  metricsFile?: string;
  /** What `args.cni.announce` changes for this attachment under podOverrides; absent without it. */
  podAnnounce?: PodAnnounce;
  /** The previous plugin's result, unvalidated: see parsePrevResult. */
  prevResult?: unknown;
  /** Capability args from the runtime; `mac` is present only with `"capabilities": {"mac": true}`. */
  runtimeConfig?: { mac?: string; [key: string]: unknown };
  /** Per-attachment args as received (Multus puts a pod's cni-args in `args.cni`); `podAnnounce` is what counts. */
  args?: { cni?: Record<string, unknown>; [key: string]: unknown };
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
  conflictCheck: 'off',
  probeMs: 100,
  probes: 2,
  stateDir: '/run/cni-announcer',
  logLevel: 'info',
  podOverrides: DEFAULT_POD_OVERRIDES,
  idleExitMs: 30000,
} as const satisfies Partial<Record<keyof PluginConfig, unknown>>;

/** The GC attachment list keys: the 1.1.0 spec text's and the one runtimes send as well. */
export const ATTACHMENT_KEYS = ['cni.dev/valid-attachments', 'cni.dev/attachments'] as const;

const attachment = obj({ containerID: str(), ifname: str() });

const configSchema = obj({
  cniVersion: str(),
  name: str(),
  type: str(),
  ...OVERRIDABLE,
  ...PLUGIN_WIDE,
  runtimeConfig: z.optional(obj({ mac: z.optional(str()) })),
  args: z.optional(obj({ cni: z.optional(obj({})) })),
  [ATTACHMENT_KEYS[0]]: z.optional(list(attachment)),
  [ATTACHMENT_KEYS[1]]: z.optional(list(attachment)),
});

/**
 * Validates the network config and applies defaults and podOverrides. Unknown fields are
 * tolerated (kept in `raw`). Throws one CniError (code 7) naming the bad fields, e.g.
 * `invalid config: "count" must be an integer from 0 to 10 (got 11)`.
 */
export function parseConfig(raw: unknown): PluginConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw configError([`the network config must be a JSON object (got ${describeValue(raw)})`]);
  }
  const parsed = configSchema.safeParse(raw);
  const problems = parsed.success ? [] : issueTexts(parsed.error.issues, raw, []);
  // Read on its own so that the pod's problems are reported with the conflist's; an invalid
  // podOverrides (reported above) allows nothing.
  const policy = PLUGIN_WIDE.podOverrides.safeParse((raw as { podOverrides?: unknown }).podOverrides);
  const podOverrides = policy.success ? (policy.data ?? [...DEFAULTS.podOverrides]) : [];
  const announceRaw = valueAt(raw, ANNOUNCE_PATH);
  let podAnnounce: PodAnnounce | undefined;
  if (announceRaw !== undefined) {
    const result = applyPodOverrides(announceRaw, podOverrides);
    if (result.ok) podAnnounce = result.announce;
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
    conflictCheck: d.conflictCheck ?? DEFAULTS.conflictCheck,
    probeMs: d.probeMs ?? DEFAULTS.probeMs,
    probes: d.probes ?? DEFAULTS.probes,
    stateDir: d.stateDir ?? DEFAULTS.stateDir,
    logLevel: d.logLevel ?? DEFAULTS.logLevel,
    podOverrides,
    idleExitMs: d.idleExitMs ?? DEFAULTS.idleExitMs,
    raw: raw as Record<string, unknown>,
  };
  if (d.rateLimit !== undefined) config.rateLimit = { framesPerSecond: d.rateLimit.framesPerSecond, burst: d.rateLimit.burst };
  if (d.metricsFile !== undefined) config.metricsFile = d.metricsFile;
  if (d.interfaces !== undefined) config.interfaces = d.interfaces;
  if (d.logFile !== undefined) config.logFile = d.logFile;
  if (podAnnounce !== undefined) config.podAnnounce = podAnnounce;
  if ('prevResult' in raw) config.prevResult = (raw as { prevResult?: unknown }).prevResult;
  if (d.runtimeConfig !== undefined) config.runtimeConfig = d.runtimeConfig;
  if (d.args !== undefined) config.args = d.args;
  const lists = ATTACHMENT_KEYS.map((k) => d[k]).filter((l) => l !== undefined);
  if (lists.length > 0) config.validAttachments = mergeAttachments(lists.flat());
  const burst = burstProblem(config, podAnnounce?.overrides ?? {});
  if (burst !== undefined) throw configError([burst]);
  return config;
}

/**
 * The burst cap: the last round may come at most MAX_BURST_SPAN_MS after the first, so that no
 * config or pod keeps a background process alive for long (count 10, intervalMs 60000 and
 * backoff 4 would take 60 days). Checked on the conflist alone, then with the pod's overrides.
 */
function burstProblem(config: PluginConfig, overrides: AnnounceOverrides): string | undefined {
  const own = { count: config.count, intervalMs: config.intervalMs, backoff: config.backoff };
  for (const [fields, names] of [
    [own, { count: '"count"', intervalMs: '"intervalMs"', backoff: '"backoff"' }],
    [{ ...own, ...pick(overrides) }, namesWithOverrides(overrides)],
  ] as const) {
    const span = burstSpanMs(fields.count, fields.intervalMs, fields.backoff);
    if (span > MAX_BURST_SPAN_MS) {
      return (
        `${names.count} ${fields.count}, ${names.intervalMs} ${fields.intervalMs} and ${names.backoff} ${fields.backoff} ` +
        `put the last round ${formatSpan(span)} after the first (the sum of intervalMs × backoff^k for k < count - 1); ` +
        `a burst may last at most ${formatSpan(MAX_BURST_SPAN_MS)}`
      );
    }
  }
  return undefined;
}

function pick(o: AnnounceOverrides): Partial<Record<'count' | 'intervalMs' | 'backoff', number>> {
  const out: Partial<Record<'count' | 'intervalMs' | 'backoff', number>> = {};
  if (o.count !== undefined) out.count = o.count;
  if (o.intervalMs !== undefined) out.intervalMs = o.intervalMs;
  if (o.backoff !== undefined) out.backoff = o.backoff;
  return out;
}

function namesWithOverrides(o: AnnounceOverrides): Record<'count' | 'intervalMs' | 'backoff', string> {
  const name = (k: 'count' | 'intervalMs' | 'backoff') => (o[k] === undefined ? `"${k}"` : `"${ANNOUNCE_PATH.join('.')}.${k}"`);
  return { count: name('count'), intervalMs: name('intervalMs'), backoff: name('backoff') };
}

/** 600000 → "10 min"; 5242820000 → "60 days"; below a minute, in seconds. */
function formatSpan(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'days'],
    [3_600_000, 'h'],
    [60_000, 'min'],
  ];
  for (const [size, unit] of units) if (ms >= size) return `${Math.round((ms / size) * 10) / 10} ${unit}`;
  return `${Math.round(ms / 100) / 10} s`;
}

function mergeAttachments(entries: readonly { containerID: string; ifname: string }[]): Attachment[] {
  const seen = new Map<string, Attachment>();
  for (const e of entries) {
    seen.set(`${e.containerID}\u0000${e.ifname}`, { containerId: e.containerID, ifname: e.ifname });
  }
  return [...seen.values()];
}

function configError(problems: readonly string[]): CniError {
  return new CniError(ErrorCode.InvalidConfig, `invalid config: ${listProblems(problems)}`);
}
