// A pod's annotation (`args.cni.announce`, from Multus `cni-args`) is written by the pod's
// author, not by the operator who wrote the conflist. So it changes only what the conflist's
// `podOverrides` lets it change; anything else it names is ignored and logged, never an error,
// so that tightening the policy never breaks a pod's start.
import { fieldProblem } from './field-path';
import { isConflistOnly, issueTexts, overrideSchema, type AnnounceOverrides, type PodOverride } from './option-schema';
import { check } from './zod-checks';

/** Where `args.cni.announce` sits in the config. */
export const ANNOUNCE_PATH = ['args', 'cni', 'announce'] as const;

/** An `args.cni.announce` field that was not applied, and why. */
export interface IgnoredOverride {
  /** Its path, e.g. `args.cni.announce.count`. */
  field: string;
  value: unknown;
  reason: string;
}

/** What `args.cni.announce` changes for one attachment once podOverrides is applied. */
export interface PodAnnounce {
  /** Fields podOverrides allows, validated. */
  overrides: AnnounceOverrides;
  /** Fields left out, with the reason: ADD logs them at warn. */
  ignored: IgnoredOverride[];
}

/**
 * Applies podOverrides to the value of `args.cni.announce`: `true`, `false` (short for
 * `{"enabled": …}`) or an object of overrides.
 * - A field podOverrides names (alone or as `field=value`) is validated: a bad value is a problem
 *   (code 7), as in the conflist. A valid value podOverrides does not allow is ignored.
 * - `enabled: true` is always accepted: it only means "not turned off" and never re-enables.
 * - Any other overridable field, and any option only the conflist sets (scope attachment or
 *   node), is ignored, unvalidated.
 * - Unknown keys are ignored silently, as unknown config fields are.
 */
export function applyPodOverrides(
  value: unknown,
  allowed: readonly PodOverride[],
): { ok: true; announce: PodAnnounce } | { ok: false; problems: string[] } {
  const fields = typeof value === 'boolean' ? { enabled: value } : value;
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) {
    return { ok: false, problems: [fieldProblem(ANNOUNCE_PATH, 'must be true, false or an object of option overrides', value)] };
  }
  const overrides: AnnounceOverrides = {};
  const ignored: IgnoredOverride[] = [];
  const problems: string[] = [];
  const policy = `podOverrides allows ${allowed.length === 0 ? 'nothing' : allowed.join(', ')}`;
  for (const [key, v] of Object.entries(fields)) {
    const field = `${ANNOUNCE_PATH.join('.')}.${key}`;
    if (isConflistOnly(key)) {
      ignored.push({ field, value: v, reason: 'only the conflist sets it' });
      continue;
    }
    const schema = overrideSchema(key);
    if (schema === undefined) continue;
    if (key === 'enabled' && v === true) {
      overrides.enabled = true;
      continue;
    }
    if (!allowed.some((t) => t === key || t.startsWith(`${key}=`))) {
      ignored.push({ field, value: v, reason: `not allowed: ${policy}` });
      continue;
    }
    const parsed = check(schema, v);
    if (!parsed.ok) {
      problems.push(...issueTexts(parsed.issues, v, [...ANNOUNCE_PATH, key]));
      continue;
    }
    if (allowed.includes(key as PodOverride) || allowed.includes(`${key}=${String(parsed.value)}` as PodOverride)) {
      Object.assign(overrides, { [key]: parsed.value });
    } else {
      ignored.push({ field, value: v, reason: `not allowed: ${policy}` });
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, announce: { overrides, ignored } };
}
