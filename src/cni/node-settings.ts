// Pure: the settings of a node's announcer, from one source: the file `<stateDir>/announcer.conf`
// (JSON, root's, 0600, written by `announcer install --state-dir` from its flags), over the
// defaults of OPTIONS. Every announcer of a stateDir reads the same file, so all get the same
// settings; no conflist sets them (a conflist's node options are accepted, ignored and said:
// src/daemon/host.ts).
// Each setting's schema is its option's in OPTIONS; the announcer's own log reuses the schemas of
// the network's `logFile` and `logLevel`.
import { isJsonObject } from './decode';
import { describeValue, fieldProblem } from './errors';
import { LOG_LEVELS, OPTIONS, type NodeOptionKey, type OptionValues } from './option-schema';
import { check } from './zod-checks';
import { NODE_SETTINGS_FILE } from '../state-files';

/** The largest node settings file read. */
export const NODE_SETTINGS_MAX_BYTES = 4096;

/** Each setting's flag, and what its usage line calls the flag's value. */
const FLAGS = {
  idleExitMs: ['idle-exit-ms', 'MS'],
  metricsFile: ['metrics-file', 'PATH'],
  rateLimit: ['rate-limit', 'FRAMES_PER_SECOND/BURST'],
  logFile: ['log-file', 'PATH'],
  logLevel: ['log-level', LOG_LEVELS.join('|')],
} as const;

/** A setting's name, in the file and in NodeSettings. */
type NodeSettingKey = keyof typeof FLAGS;

/**
 * The settings of a node's announcer, defaults applied. No rateLimit: no frame budget; no logFile: the announcer's own
 * log (not a network's) is nothing but stdout under --log-format.
 */
export type NodeSettings = OptionValues<NodeSettingKey>;

/** Settings as one source gives them: each may be absent. */
export type GivenSettings = Partial<NodeSettings>;

const KEYS = Object.keys(FLAGS) as NodeSettingKey[];

/** The flags of the node settings, for parseFlags (`announcer install`). */
export const NODE_FLAGS: Record<string, 'string'> = Object.fromEntries(KEYS.map((k) => [FLAGS[k][0], 'string']));

/** The flags' part of a usage line. */
export const NODE_FLAGS_USAGE = KEYS.map((k) => `[--${FLAGS[k][0]}=${FLAGS[k][1]}]`).join(' ');

/**
 * Where a node option is set instead of a conflist:
 * `"idleExitMs" in <stateDir>/announcer.conf (announcer install --idle-exit-ms)`.
 */
export function whereToSet(key: NodeOptionKey): string {
  return `"${key}" in <stateDir>/${NODE_SETTINGS_FILE} (announcer install --${FLAGS[key][0]})`;
}

/** The settings in force: each from the file, else its option's default. */
export function resolveNodeSettings(file: GivenSettings): NodeSettings {
  const out: Record<string, unknown> = {};
  for (const key of KEYS) {
    const value = file[key] ?? OPTIONS[key].fallback;
    if (value !== undefined) out[key] = value;
  }
  return out as NodeSettings;
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
    if (!Object.hasOwn(FLAGS, key)) {
      return { ok: false, problem: `${file}: "${key}" is not a node setting (${KEYS.join(', ')})` };
    }
    const checked = check(OPTIONS[key as NodeSettingKey].schema, value);
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
    const flag = FLAGS[key][0];
    const text = flags[flag];
    if (typeof text !== 'string') continue;
    const value = flagValue(key, text);
    if (value === undefined) return { ok: false, problem: `--${flag} must be FRAMES_PER_SECOND/BURST, e.g. 10/10` };
    const checked = check(OPTIONS[key].schema, value);
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
