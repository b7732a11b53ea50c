// Pure: the settings of a node's announcer, from one source: the file `<stateDir>/announcer.conf`
// (JSON, root's, 0600, written by `announcer install --state-dir` from its flags), over the
// defaults of OPTIONS. Every announcer of a stateDir reads the same file, so all get the same
// settings; no conflist sets them (a conflist's node options are accepted, ignored and said:
// src/daemon/host.ts).
// Each setting's schema is its option's in OPTIONS; the announcer's own log reuses the schemas of
// the network's `logFile` and `logLevel`.
import { isJsonObject } from './decode';
import { describeValue, fieldProblem } from './errors';
import { OPTIONS, type LogLevel, type NodeOptionKey, type OptionValue } from './option-schema';
import { check, type AnySchema } from './zod-checks';
import { NODE_SETTINGS_FILE } from '../state-files';

/** The largest node settings file read. */
export const NODE_SETTINGS_MAX_BYTES = 4096;

/** The settings of a node's announcer, defaults applied. */
export interface NodeSettings {
  idleExitMs: number;
  metricsFile?: string | undefined;
  /** The node-wide frame budget (none: unlimited). */
  rateLimit?: OptionValue<'rateLimit'> | undefined;
  /** The announcer's own log (not a network's): none, nothing but stdout under --log-format. */
  logFile?: string | undefined;
  logLevel: LogLevel;
}

/** A setting's name, in the file and in NodeSettings. */
export type NodeSettingKey = keyof NodeSettings;

/** Settings as one source gives them: each may be absent. */
export type GivenSettings = Partial<NodeSettings>;

/** Each setting: its flag, its schema (its option's) and its default. */
const SETTINGS: Record<NodeSettingKey, { flag: string; schema: AnySchema; fallback?: unknown }> = {
  idleExitMs: { flag: 'idle-exit-ms', schema: OPTIONS.idleExitMs.schema, fallback: OPTIONS.idleExitMs.fallback },
  metricsFile: { flag: 'metrics-file', schema: OPTIONS.metricsFile.schema },
  rateLimit: { flag: 'rate-limit', schema: OPTIONS.rateLimit.schema },
  logFile: { flag: 'log-file', schema: OPTIONS.logFile.schema },
  logLevel: { flag: 'log-level', schema: OPTIONS.logLevel.schema, fallback: OPTIONS.logLevel.fallback },
};

const KEYS = Object.keys(SETTINGS) as NodeSettingKey[];

/** The flags of the node settings, for parseFlags (`announcer install`). */
export const NODE_FLAGS = Object.fromEntries(KEYS.map((k) => [SETTINGS[k].flag, 'string' as const])) as Record<
  string,
  'string'
>;

/** The flags' part of a usage line. */
export const NODE_FLAGS_USAGE =
  '[--idle-exit-ms=MS] [--metrics-file=PATH] [--rate-limit=FRAMES_PER_SECOND/BURST] [--log-file=PATH] ' +
  '[--log-level=error|warn|info|debug]';

/** Where a node option is set instead of a conflist: `"idleExitMs" in <stateDir>/announcer.conf (announcer install --idle-exit-ms)`. */
export function whereToSet(key: NodeOptionKey): string {
  return `"${key}" in <stateDir>/${NODE_SETTINGS_FILE} (announcer install --${SETTINGS[key].flag})`;
}

/** The settings in force: each from the file, else its default. */
export function resolveNodeSettings(file: GivenSettings): NodeSettings {
  const out = {} as Record<NodeSettingKey, unknown>;
  for (const key of KEYS) {
    const value = file[key] ?? SETTINGS[key].fallback;
    if (value !== undefined) out[key] = value;
  }
  return out as unknown as NodeSettings;
}

/** The node settings file's text: a JSON object of the given settings (the others take their defaults). */
export function formatNodeSettings(given: GivenSettings): string {
  const present = KEYS.filter((k) => given[k] !== undefined);
  return `${JSON.stringify(Object.fromEntries(present.map((k) => [k, given[k]])), null, 2)}\n`;
}

type Parsed = { ok: true; settings: GivenSettings } | { ok: false; problem: string };

/** Parses the node settings file's text; a problem names the file and the first bad field. */
export function parseNodeSettings(text: string, file: string): Parsed {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: `${file}: not JSON: ${(err as Error).message}` };
  }
  if (!isJsonObject(doc)) return { ok: false, problem: `${file}: must be a JSON object (got ${describeValue(doc)})` };
  const settings: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(doc)) {
    if (!Object.hasOwn(SETTINGS, key))
      return { ok: false, problem: `${file}: "${key}" is not a node setting (${KEYS.join(', ')})` };
    const checked = check(SETTINGS[key as NodeSettingKey].schema, value);
    if (!checked.ok) {
      const issue = checked.issues[0]!;
      return { ok: false, problem: `${file}: ${fieldProblem([key, ...issue.path], issue.message, value)}` };
    }
    settings[key] = checked.value;
  }
  return { ok: true, settings };
}

/** The node settings the flags give (parseFlags' strings, by flag name); a problem names the flag. */
export function nodeSettingsFromFlags(flags: Readonly<Record<string, unknown>>): Parsed {
  const settings: Record<string, unknown> = {};
  for (const key of KEYS) {
    const { flag, schema } = SETTINGS[key];
    const text = flags[flag];
    if (typeof text !== 'string') continue;
    const value = flagValue(key, text);
    if (value === undefined) return { ok: false, problem: `--${flag} must be FRAMES_PER_SECOND/BURST, e.g. 10/10` };
    const checked = check(schema, value);
    if (!checked.ok) {
      const issue = checked.issues[0]!;
      const at = issue.path.length > 0 ? ` ${issue.path.join('.')}` : '';
      return { ok: false, problem: `--${flag}${at} ${issue.message} (got ${JSON.stringify(text)})` };
    }
    settings[key] = checked.value;
  }
  return { ok: true, settings };
}

/** A flag's text as the value its schema checks: a number for idleExitMs, an object for rateLimit. */
function flagValue(key: NodeSettingKey, text: string): unknown {
  if (key === 'idleExitMs') return /^\d{1,15}$/.test(text) ? Number(text) : text;
  if (key !== 'rateLimit') return text;
  const m = /^(\d{1,9})\/(\d{1,9})$/.exec(text);
  return m ? { framesPerSecond: Number(m[1]), burst: Number(m[2]) } : undefined;
}
