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
import {
  isConflistOnly,
  overrideSchema,
  POD_OVERRIDE_TOKENS,
  type AnnounceOverrides,
  type PodOverride,
} from './option-schema';
import { check } from './zod-checks';

/** Where `args.cni.announce` sits in the config. */
const ANNOUNCE_PATH = ['args', 'cni', 'announce'] as const;

/** An override field that was not applied, and why. */
interface IgnoredOverride {
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
  problem: (path, message, value) =>
    path.length === 0
      ? `${NAME} ${message} (got ${describeValue(value)})`
      : `${NAME}: ${fieldProblem(path, message, value)}`,
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
  const asks: PodAnnounce[] = [];
  const problems: string[] = [];
  const ask = (value: unknown, channel: PodChannel) => {
    const result = applyPodOverrides(value, allowed, channel);
    if (result.ok) asks.push(result.announce);
    else problems.push(...result.problems);
  };
  const fromArgs = valueAt(doc, ANNOUNCE_PATH);
  if (fromArgs !== undefined) ask(fromArgs, ARGS_CHANNEL);
  const annotation = readAnnounceAnnotation(doc);
  if (annotation.kind === 'value') ask(annotation.value, ANNOTATION_CHANNEL);
  if (annotation.kind === 'problem') problems.push(annotation.problem);
  if (annotation.kind === 'undeclared') {
    asks.push({
      overrides: {},
      ignored: [{ field: ANNOTATION_CHANNEL.name, value: annotation.text, reason: annotation.reason }],
      from: {},
    });
  }
  return asks.length === 0 || problems.length > 0 ? { problems } : { announce: combinePodAnnounces(asks), problems };
}

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
function applyPodOverrides(
  value: unknown,
  allowed: readonly PodOverride[],
  channel: PodChannel,
): { ok: true; announce: PodAnnounce } | { ok: false; problems: string[] } {
  const fields = typeof value === 'boolean' ? { enabled: value } : value;
  if (!isJsonObject(fields)) {
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
function combinePodAnnounces(asks: readonly PodAnnounce[]): PodAnnounce {
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

/** What the config says about the annotation. */
export type AnnotationRead =
  /** No annotation for the announcer. */
  | { kind: 'absent' }
  /** The pod's overrides: `true`, `false` or an object, for applyPodOverrides. */
  | { kind: 'value'; value: unknown }
  /** Sent although the entry does not declare the capability: ignored, with this text for the log. */
  | { kind: 'undeclared'; text: unknown; reason: string }
  /** Not a value the announcer reads: a code-7 problem. */
  | { kind: 'problem'; problem: string };

/**
 * Reads the announcer's annotation from a network config. Only when the config declares
 * `"capabilities": {"io.kubernetes.cri.pod-annotations": true}`: a runtime may send runtimeConfig
 * for capabilities the entry did not declare, and the operator's declaration is what opens this
 * channel to pods, so the annotation is then ignored (reported as undeclared, never validated).
 */
export function readAnnounceAnnotation(doc: Record<string, unknown>): AnnotationRead {
  const runtimeConfig = doc.runtimeConfig;
  if (!isJsonObject(runtimeConfig) || !Object.hasOwn(runtimeConfig, POD_ANNOTATIONS_CAPABILITY))
    return { kind: 'absent' };
  // containerd 1.6 sends null for a pod without annotations.
  const annotations = runtimeConfig[POD_ANNOTATIONS_CAPABILITY] ?? {};
  const declared = (doc.capabilities as Record<string, unknown> | undefined)?.[POD_ANNOTATIONS_CAPABILITY] === true;
  if (!declared) {
    if (!isJsonObject(annotations) || !Object.hasOwn(annotations, ANNOUNCE_ANNOTATION)) return { kind: 'absent' };
    const declaration = `"capabilities": {"${POD_ANNOTATIONS_CAPABILITY}": true}`;
    const reason = `the config does not declare the capability: ${declaration}`;
    return { kind: 'undeclared', text: annotations[ANNOUNCE_ANNOTATION], reason };
  }
  if (!isJsonObject(annotations))
    return {
      kind: 'problem',
      problem: `${MAP_NAME} must be an object of the pod's annotations (got ${describeValue(annotations)})`,
    };
  if (!Object.hasOwn(annotations, ANNOUNCE_ANNOTATION)) return { kind: 'absent' };
  return parseAnnotation(annotations[ANNOUNCE_ANNOTATION]);
}

/**
 * The annotation's text, parsed: JSON `true`, `false` or an object; anything else is a problem naming the annotation.
 */
export function parseAnnotation(text: unknown): AnnotationRead {
  if (typeof text !== 'string')
    return { kind: 'problem', problem: `${NAME} must be a string (got ${describeValue(text)})` };
  // As stdin: JSON.parse, and what later logs the values, must never meet a nesting bomb.
  if (nestingExceeds(text, MAX_JSON_DEPTH)) {
    return {
      kind: 'problem',
      problem: `${NAME} nests JSON arrays and objects more than ${MAX_JSON_DEPTH} levels deep`,
    };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'problem', problem: `${NAME} is not JSON: it ${EXPECTED} (got ${describeValue(text)})` };
  }
  if (typeof value === 'boolean' || isJsonObject(value)) return { kind: 'value', value };
  return { kind: 'problem', problem: `${NAME} ${EXPECTED} (got ${describeValue(text)})` };
}
