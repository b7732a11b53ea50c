// What a pod may say about its own attachment. It speaks through two channels: `args.cni.announce`
// (Multus `cni-args`), and the annotation `cni-announcer/announce`, which containerd's CRI hands a
// plugin, with all of a pod's annotations, as runtimeConfig["io.kubernetes.cri.pod-annotations"]
// when its conflist entry declares that capability. On a primary network that no Multus cni-args
// reach, the annotation is how a pod says what `args.cni.announce` says; the operator opens that
// channel by declaring the capability. Either is written by the pod's author, not by the operator
// who wrote the conflist. So it changes only what the conflist's `podOverrides` lets it change;
// anything else it names is ignored and logged, never an error, so that tightening the policy
// never breaks a pod's start.
import { isJsonObject, MAX_JSON_DEPTH, nestingExceeds } from './decode';
import { describeValue, fieldProblem, valueAt, type PathSegment } from './errors';
import { OPTIONS, POD_OVERRIDE_TOKENS, type AnnounceOverrides, type PodOverride } from './option-schema';
import { bool, check } from './zod-checks';

/** Where `args.cni.announce` sits in the config. */
const ANNOUNCE_PATH = ['args', 'cni', 'announce'] as const;

/** An override field that was not applied (`field`: its channel and key, e.g. `args.cni.announce.count`), and why. */
type IgnoredOverride = { field: string; value: unknown; reason: string };

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
interface PodChannel {
  /** How logs and messages name it, e.g. `args.cni.announce`. */
  name: string;
  /** Unknown keys, and invalid values of fields podOverrides leaves out, are problems too, not ignored. */
  strict: boolean;
  /** The text of a problem at `path` inside the channel's value ([] for the value itself). */
  problem(path: readonly PathSegment[], message: string, value: unknown): string;
}

/** `args.cni.announce`: lenient, so that a pod's cni-args written for a newer announcer still start. */
const ARGS_CHANNEL: PodChannel = {
  name: ANNOUNCE_PATH.join('.'),
  strict: false,
  problem: (path, message, value) => fieldProblem([...ANNOUNCE_PATH, ...path], message, value),
};

/** The capability a conflist entry declares to get the pod's annotations. */
const POD_ANNOTATIONS_CAPABILITY = 'io.kubernetes.cri.pod-annotations';
/** The annotation a pod sets: `"false"`, `"true"`, or the JSON text of an `args.cni.announce` object. */
const ANNOUNCE_ANNOTATION = 'cni-announcer/announce';

const MAP_NAME = `runtimeConfig["${POD_ANNOTATIONS_CAPABILITY}"]`;
const NAME = `${MAP_NAME}["${ANNOUNCE_ANNOTATION}"]`;
const EXPECTED = 'must be "false", "true" or the JSON text of an object of option overrides';

/** The annotation as a channel of pod overrides: strict, since a typo in a pod's opt-out must not pass unnoticed. */
const ANNOTATION_CHANNEL: PodChannel = {
  name: NAME,
  strict: true,
  // Never the value itself: parseAnnotation has refused whatever is neither a boolean nor an object.
  problem: (path, message, value) => `${NAME}: ${fieldProblem(path, message, value)}`,
};

/**
 * What the pod asks through `args.cni.announce` and through its annotation, each under
 * podOverrides (`allowed`), combined (see combinePodAnnounces): `args.cni.announce` names one
 * attachment, so it comes first. Problems are code-7 texts.
 */
export function readPodAnnounce(
  doc: Record<string, unknown>,
  allowed: readonly PodOverride[],
): { announce?: PodAnnounce; problems: string[] } {
  const problems: string[] = [];
  const fromArgs = valueAt(doc, ANNOUNCE_PATH);
  const asks = [
    fromArgs === undefined ? undefined : applyPodOverrides(fromArgs, allowed, ARGS_CHANNEL, problems),
    annotationAsk(doc, allowed, problems),
  ].filter((ask) => ask !== undefined);
  return asks.length === 0 || problems.length > 0 ? { problems } : { announce: combinePodAnnounces(asks), problems };
}

/** The keys a pod may name: `enabled` and the overridable options. */
const POD_KEYS = ['enabled', ...POD_OVERRIDE_TOKENS.filter((t) => !t.includes('='))];

/**
 * Applies podOverrides to the value a channel carries: `true`, `false` (short for
 * `{"enabled": …}`) or an object of overrides; pushes its problems.
 * - A field podOverrides names (alone or as `field=value`) is validated: a bad value is a problem
 *   (code 7), as in the conflist. A valid value podOverrides does not allow is ignored.
 * - `enabled: true` is always accepted: it only means "not turned off" and never re-enables.
 * - Any other overridable field, and any option only the conflist sets (scope attachment or
 *   node), is ignored; unvalidated unless the channel is strict.
 * - Unknown keys are ignored silently, as unknown config fields are; a strict channel's are problems.
 */
function applyPodOverrides(
  value: unknown,
  allowed: readonly string[],
  channel: PodChannel,
  problems: string[],
): PodAnnounce {
  const announce: PodAnnounce = { overrides: {}, ignored: [], from: {} };
  const fields = typeof value === 'boolean' ? { enabled: value } : value;
  if (!isJsonObject(fields)) {
    problems.push(channel.problem([], 'must be true, false or an object of option overrides', value));
    return announce;
  }
  const policy = `podOverrides allows ${allowed.length === 0 ? 'nothing' : allowed.join(', ')}`;
  const ignore = (key: string, v: unknown, reason: string) =>
    announce.ignored.push({ field: `${channel.name}.${key}`, value: v, reason });
  const apply = (key: string, v: unknown) => {
    Object.assign(announce.overrides, { [key]: v });
    Object.assign(announce.from, { [key]: channel.name });
  };
  for (const [key, v] of Object.entries(fields)) {
    const option = Object.hasOwn(OPTIONS, key) ? OPTIONS[key as keyof typeof OPTIONS] : undefined;
    if (option !== undefined && option.scope !== 'pod') {
      ignore(key, v, 'only the conflist sets it');
      continue;
    }
    const schema = key === 'enabled' ? bool() : option?.schema;
    if (schema === undefined) {
      if (channel.strict)
        problems.push(channel.problem([key], `is not an option a pod may set (${POD_KEYS.join(', ')})`, v));
      continue;
    }
    const named = allowed.some((t) => t === key || t.startsWith(`${key}=`));
    const parsed = named || channel.strict ? check(schema, v) : undefined;
    if (parsed !== undefined && !parsed.ok) {
      problems.push(...parsed.issues.map((i) => channel.problem([key, ...i.path], i.message, valueAt(v, i.path))));
    } else if (key === 'enabled' && v === true) {
      apply(key, true);
    } else if (named && (allowed.includes(key) || allowed.includes(`${key}=${String(parsed?.value)}`))) {
      apply(key, parsed?.value);
    } else {
      ignore(key, v, `not allowed: ${policy}`);
    }
  }
  return announce;
}

/**
 * Combines what a pod asked through several channels, the channel that decides a shared field
 * first (`args.cni.announce` names one attachment, the annotation every attachment of the pod):
 * - off wins: `enabled: false` from any channel (that podOverrides lets turn it off) turns
 *   announcing off, and an `enabled: true` beside it is ignored with a warning;
 * - any other field set by two channels takes the first one's value; a different value from a
 *   later channel is ignored with a warning.
 */
function combinePodAnnounces(asks: readonly PodAnnounce[]): PodAnnounce {
  const out: PodAnnounce = { overrides: {}, ignored: asks.flatMap((a) => a.ignored), from: {} };
  const offBy = asks.filter((a) => a.overrides.enabled === false).map((a) => a.from.enabled ?? '');
  for (const ask of asks) {
    for (const [key, value] of Object.entries(ask.overrides) as [keyof AnnounceOverrides, unknown][]) {
      const ignore = (reason: string) => out.ignored.push({ field: `${ask.from[key]}.${key}`, value, reason });
      if (key === 'enabled' && offBy.length > 0) {
        if (value === true) {
          ignore(`turned off by ${offBy.join(', ')}: a request to announce does not turn announcing back on`);
        }
      } else if (out.overrides[key] === undefined) {
        Object.assign(out.overrides, { [key]: value });
        out.from[key] = ask.from[key];
      } else if (out.overrides[key] !== value) {
        ignore(`${out.from[key]} sets it (${JSON.stringify(out.overrides[key])}) and comes first`);
      }
    }
  }
  if (offBy.length > 0) {
    out.overrides.enabled = false;
    out.from.enabled = offBy.join(', ');
  }
  return out;
}

/**
 * What the pod asks through its annotation; undefined without one. Read only when the config declares
 * `"capabilities": {"io.kubernetes.cri.pod-annotations": true}`: a runtime may send runtimeConfig
 * for capabilities the entry did not declare, and the operator's declaration is what opens this
 * channel to pods, so the annotation is then ignored (logged, never validated).
 */
function annotationAsk(
  doc: Record<string, unknown>,
  allowed: readonly string[],
  problems: string[],
): PodAnnounce | undefined {
  const runtimeConfig = doc.runtimeConfig;
  if (!isJsonObject(runtimeConfig) || !Object.hasOwn(runtimeConfig, POD_ANNOTATIONS_CAPABILITY)) return undefined;
  // containerd 1.6 sends null for a pod without annotations.
  const annotations = runtimeConfig[POD_ANNOTATIONS_CAPABILITY] ?? {};
  const declared = (doc.capabilities as Record<string, unknown> | undefined)?.[POD_ANNOTATIONS_CAPABILITY] === true;
  if (declared && !isJsonObject(annotations)) {
    problems.push(`${MAP_NAME} must be an object of the pod's annotations (got ${describeValue(annotations)})`);
    return undefined;
  }
  if (!isJsonObject(annotations) || !Object.hasOwn(annotations, ANNOUNCE_ANNOTATION)) return undefined;
  const text = annotations[ANNOUNCE_ANNOTATION];
  if (!declared) {
    const declaration = `"capabilities": {"${POD_ANNOTATIONS_CAPABILITY}": true}`;
    const reason = `the config does not declare the capability: ${declaration}`;
    return { overrides: {}, ignored: [{ field: NAME, value: text, reason }], from: {} };
  }
  const parsed = parseAnnotation(text);
  if ('value' in parsed) return applyPodOverrides(parsed.value, allowed, ANNOTATION_CHANNEL, problems);
  problems.push(parsed.problem);
  return undefined;
}

/** The annotation's text, parsed: JSON `true`, `false` or an object; anything else is a problem naming it. */
function parseAnnotation(text: unknown): { value: unknown } | { problem: string } {
  if (typeof text !== 'string') return { problem: `${NAME} must be a string (got ${describeValue(text)})` };
  // As stdin: JSON.parse, and what later logs the values, must never meet a nesting bomb.
  if (nestingExceeds(text, MAX_JSON_DEPTH)) {
    return { problem: `${NAME} nests JSON arrays and objects more than ${MAX_JSON_DEPTH} levels deep` };
  }
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'boolean' || isJsonObject(value)) return { value };
  } catch {
    return { problem: `${NAME} is not JSON: it ${EXPECTED} (got ${describeValue(text)})` };
  }
  return { problem: `${NAME} ${EXPECTED} (got ${describeValue(text)})` };
}
