// A pod's overrides (`args.cni.announce` from Multus `cni-args`, or the pod annotation that
// containerd passes in runtimeConfig) are written by the pod's author, not by the operator who
// wrote the conflist. So they change only what the conflist's `podOverrides` lets them change;
// anything else they name is ignored and logged, never an error, so that tightening the policy
// never breaks a pod's start.
import { fieldProblem, valueAt, type PathSegment } from './errors';
import {
  isConflistOnly,
  overrideSchema,
  POD_OVERRIDE_TOKENS,
  type AnnounceOverrides,
  type PodOverride,
} from './option-schema';
import { check } from './zod-checks';

/** Where `args.cni.announce` sits in the config. */
export const ANNOUNCE_PATH = ['args', 'cni', 'announce'] as const;

/** An override field that was not applied, and why. */
export interface IgnoredOverride {
  /** Its channel and key, e.g. `args.cni.announce.count`. */
  field: string;
  value: unknown;
  reason: string;
}

/** What a pod's overrides change for one attachment once podOverrides is applied. */
export interface PodAnnounce {
  /** Fields podOverrides allows, validated. */
  overrides: AnnounceOverrides;
  /** Fields left out, with the reason: ADD logs them at warn. */
  ignored: IgnoredOverride[];
  /** The channel (its name) each override came from; for `enabled: false` from several, their names joined by ", ". */
  from: { [K in keyof AnnounceOverrides]?: string };
}

/** A way a pod's overrides reach the plugin. */
export interface PodChannel {
  /** How logs and messages name it, e.g. `args.cni.announce`. */
  name: string;
  /** Unknown keys, and invalid values of fields podOverrides leaves out, are problems too, not ignored. */
  strict: boolean;
  /** The text of a problem at `path` inside the channel's value ([] for the value itself). */
  problem(path: readonly PathSegment[], message: string, value: unknown): string;
}

/**
 * `args.cni.announce`: lenient, as it always was, so that a pod's cni-args written for a newer announcer still start.
 */
export const ARGS_CHANNEL: PodChannel = {
  name: ANNOUNCE_PATH.join('.'),
  strict: false,
  problem: (path, message, value) => fieldProblem([...ANNOUNCE_PATH, ...path], message, value),
};

/** The keys a pod may name: `enabled` and the overridable options. */
const POD_KEYS = ['enabled', ...POD_OVERRIDE_TOKENS.filter((t) => !t.includes('='))];

/**
 * Applies podOverrides to the value a channel carries: `true`, `false` (short for
 * `{"enabled": …}`) or an object of overrides.
 * - A field podOverrides names (alone or as `field=value`) is validated: a bad value is a problem
 *   (code 7), as in the conflist. A valid value podOverrides does not allow is ignored.
 * - `enabled: true` is always accepted: it only means "not turned off" and never re-enables.
 * - Any other overridable field, and any option only the conflist sets (scope attachment or
 *   node), is ignored; unvalidated unless the channel is strict.
 * - Unknown keys are ignored silently, as unknown config fields are; a strict channel's are problems.
 */
export function applyPodOverrides(
  value: unknown,
  allowed: readonly PodOverride[],
  channel: PodChannel = ARGS_CHANNEL,
): { ok: true; announce: PodAnnounce } | { ok: false; problems: string[] } {
  const fields = typeof value === 'boolean' ? { enabled: value } : value;
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) {
    return {
      ok: false,
      problems: [channel.problem([], 'must be true, false or an object of option overrides', value)],
    };
  }
  const announce: PodAnnounce = { overrides: {}, ignored: [], from: {} };
  const problems: string[] = [];
  const policy = `podOverrides allows ${allowed.length === 0 ? 'nothing' : allowed.join(', ')}`;
  const ignore = (key: string, v: unknown, reason: string) =>
    announce.ignored.push({ field: `${channel.name}.${key}`, value: v, reason });
  for (const [key, v] of Object.entries(fields)) {
    if (isConflistOnly(key)) {
      ignore(key, v, 'only the conflist sets it');
      continue;
    }
    const schema = overrideSchema(key);
    if (schema === undefined) {
      if (channel.strict)
        problems.push(channel.problem([key], `is not an option a pod may set (${POD_KEYS.join(', ')})`, v));
      continue;
    }
    if (key === 'enabled' && v === true) {
      apply(announce, channel, 'enabled', true);
      continue;
    }
    const named = allowed.some((t) => t === key || t.startsWith(`${key}=`));
    const parsed = named || channel.strict ? check(schema, v) : undefined;
    if (parsed !== undefined && !parsed.ok) {
      problems.push(...parsed.issues.map((i) => channel.problem([key, ...i.path], i.message, valueAt(v, i.path))));
      continue;
    }
    if (
      named &&
      (allowed.includes(key as PodOverride) || allowed.includes(`${key}=${String(parsed?.value)}` as PodOverride))
    ) {
      apply(announce, channel, key as keyof AnnounceOverrides, parsed?.value);
    } else {
      ignore(key, v, `not allowed: ${policy}`);
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, announce };
}

function apply(announce: PodAnnounce, channel: PodChannel, key: keyof AnnounceOverrides, value: unknown): void {
  Object.assign(announce.overrides, { [key]: value });
  announce.from[key] = channel.name;
}

/**
 * Combines what a pod asked through several channels, the channel that decides a shared field
 * first (`args.cni.announce` names one attachment, the annotation every attachment of the pod):
 * - off wins: `enabled: false` from any channel (that podOverrides lets turn it off) turns
 *   announcing off, and an `enabled: true` beside it is ignored with a warning;
 * - any other field set by two channels takes the first one's value; a different value from a
 *   later channel is ignored with a warning.
 */
export function combinePodAnnounces(asks: readonly PodAnnounce[]): PodAnnounce {
  const out: PodAnnounce = { overrides: {}, ignored: asks.flatMap((a) => a.ignored), from: {} };
  const offBy = asks.filter((a) => a.overrides.enabled === false).map((a) => a.from.enabled ?? '');
  for (const ask of asks) {
    for (const [key, value] of Object.entries(ask.overrides) as [keyof AnnounceOverrides, unknown][]) {
      const by = ask.from[key] ?? '';
      if (key === 'enabled' && offBy.length > 0) {
        if (value === true)
          out.ignored.push({
            field: `${by}.enabled`,
            value,
            reason: `turned off by ${offBy.join(', ')}: a request to announce does not turn announcing back on`,
          });
        continue;
      }
      if (out.overrides[key] === undefined) {
        Object.assign(out.overrides, { [key]: value });
        out.from[key] = by;
      } else if (out.overrides[key] !== value) {
        out.ignored.push({
          field: `${by}.${key}`,
          value,
          reason: `${out.from[key]} sets it (${JSON.stringify(out.overrides[key])}) and comes first`,
        });
      }
    }
  }
  if (offBy.length > 0) {
    out.overrides.enabled = false;
    out.from.enabled = offBy.join(', ');
  }
  return out;
}
