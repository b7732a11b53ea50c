// containerd's CRI hands a plugin all of a pod's annotations, as
// runtimeConfig["io.kubernetes.cri.pod-annotations"], when its conflist entry declares the
// capability. On a primary network that no Multus cni-args reach, the annotation
// `cni-announcer/announce` is how a pod says what `args.cni.announce` says; the operator opens
// the channel by declaring the capability, and podOverrides still decides what it may change.
import { MAX_JSON_DEPTH, nestingExceeds } from './decode';
import { describeValue, fieldProblem } from './errors';
import type { PodChannel } from './pod-overrides';

/** The capability a conflist entry declares to get the pod's annotations. */
export const POD_ANNOTATIONS_CAPABILITY = 'io.kubernetes.cri.pod-annotations';
/** The annotation a pod sets: `"false"`, `"true"`, or the JSON text of an `args.cni.announce` object. */
export const ANNOUNCE_ANNOTATION = 'cni-announcer/announce';

const MAP_NAME = `runtimeConfig["${POD_ANNOTATIONS_CAPABILITY}"]`;
const NAME = `${MAP_NAME}["${ANNOUNCE_ANNOTATION}"]`;
const EXPECTED = 'must be "false", "true" or the JSON text of an object of option overrides';

/** The annotation as a channel of pod overrides: strict, since a typo in a pod's opt-out must not pass unnoticed. */
export const ANNOTATION_CHANNEL: PodChannel = {
  name: NAME,
  strict: true,
  problem: (path, message, value) =>
    path.length === 0
      ? `${NAME} ${message} (got ${describeValue(value)})`
      : `${NAME}: ${fieldProblem(path, message, value)}`,
};

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
  if (
    runtimeConfig === null ||
    typeof runtimeConfig !== 'object' ||
    !Object.hasOwn(runtimeConfig, POD_ANNOTATIONS_CAPABILITY)
  ) {
    return { kind: 'absent' };
  }
  // containerd 1.6 sends null for a pod without annotations.
  const annotations = (runtimeConfig as Record<string, unknown>)[POD_ANNOTATIONS_CAPABILITY] ?? {};
  const declared = (doc.capabilities as Record<string, unknown> | undefined)?.[POD_ANNOTATIONS_CAPABILITY] === true;
  const isMap = annotations !== null && typeof annotations === 'object' && !Array.isArray(annotations);
  if (!declared) {
    if (!isMap || !Object.hasOwn(annotations, ANNOUNCE_ANNOTATION)) return { kind: 'absent' };
    const declaration = `"capabilities": {"${POD_ANNOTATIONS_CAPABILITY}": true}`;
    const reason = `the config does not declare the capability: ${declaration}`;
    return { kind: 'undeclared', text: (annotations as Record<string, unknown>)[ANNOUNCE_ANNOTATION], reason };
  }
  if (!isMap)
    return {
      kind: 'problem',
      problem: `${MAP_NAME} must be an object of the pod's annotations (got ${describeValue(annotations)})`,
    };
  if (!Object.hasOwn(annotations, ANNOUNCE_ANNOTATION)) return { kind: 'absent' };
  return parseAnnotation((annotations as Record<string, unknown>)[ANNOUNCE_ANNOTATION]);
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
  if (typeof value === 'boolean' || (value !== null && typeof value === 'object' && !Array.isArray(value)))
    return { kind: 'value', value };
  return { kind: 'problem', problem: `${NAME} ${EXPECTED} (got ${describeValue(text)})` };
}
