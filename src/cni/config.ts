import { burstSpanMs, MAX_BURST_SPAN_MS } from '../plan';
import { skipRefusal } from './option-bounds';
import { fieldProblem, invalidConfig, valueAt } from './errors';
import { optional } from 'zod/mini';
import { optionFields, optionKeys, type NodeOptionKey, type PluginOptions, type PodOverride } from './option-schema';
import { readPodAnnounce, type PodAnnounce } from './pod-overrides';
import { check, list, obj, str } from './zod-checks';

/** One live attachment named by GC. */
export type Attachment = { containerId: string; ifname: string };

/**
 * The network config from stdin, validated, with defaults applied: the options of OPTIONS, and what the runtime adds.
 */
export type PluginConfig = PluginOptions & {
  cniVersion: string;
  name: string;
  type: string;
  /**
   * What the pod's `args.cni.announce` and annotation change for this attachment under podOverrides; absent without
   * either.
   */
  podAnnounce?: PodAnnounce;
  /** The previous plugin's result, unvalidated: see parsePrevResult. */
  prevResult?: unknown;
  /** Capability args from the runtime; `mac` is present only with `"capabilities": {"mac": true}`. */
  runtimeConfig?: { mac?: string; [key: string]: unknown };
  /** Per-attachment args as received (Multus puts a pod's cni-args in `args.cni`); `podAnnounce` is what counts. */
  args?: { cni?: Record<string, unknown>; [key: string]: unknown };
  /**
   * GC's live attachments: the union of `cni.dev/valid-attachments` and `cni.dev/attachments`; absent when neither is
   * given.
   */
  validAttachments?: Attachment[];
  /**
   * Node options this conflist carries, as they came: accepted unchecked and never applied (the node's announcer has
   * its own, node-settings.ts); absent when there are none.
   */
  nodeOptions?: Partial<Record<NodeOptionKey, unknown>>;
};

const NODE_OPTIONS = optionKeys('node');

/** The GC attachment list keys: the 1.1.0 spec text's and the one runtimes send as well. */
const ATTACHMENT_KEYS = ['cni.dev/valid-attachments', 'cni.dev/attachments'] as const;
const attachments = optional(list(obj({ containerID: str(), ifname: str() })));

/** The fields besides the options that a checked config keeps. */
const envelopeFields = {
  cniVersion: str(),
  name: str(),
  type: str(),
  runtimeConfig: optional(obj({ mac: optional(str()) })),
  args: optional(obj({ cni: optional(obj({})) })),
};
const KEPT = [...Object.keys(envelopeFields), ...optionKeys('pod', 'attachment', 'network')];

/** The network config: the envelope, the attachment lists, the options with their defaults; unknown fields kept. */
const configSchema = obj({
  ...envelopeFields,
  [ATTACHMENT_KEYS[0]]: attachments,
  [ATTACHMENT_KEYS[1]]: attachments,
  ...optionFields(),
});

/**
 * Validates the network config (unknown fields tolerated) and applies defaults and podOverrides; throws one code-7
 * CniError naming every bad field.
 */
export function parseConfig(doc: Record<string, unknown>): PluginConfig {
  const checked = check(configSchema, doc);
  const problems = checked.ok ? [] : checked.issues.map((i) => fieldProblem(i.path, i.message, valueAt(doc, i.path)));
  // Checked on its own, for the pod's problems to be reported with the conflist's: an invalid podOverrides (reported)
  // allows nothing.
  const allowed = check(configSchema.shape.podOverrides, doc.podOverrides);
  const pod = readPodAnnounce(doc, allowed.ok ? (allowed.value as PodOverride[]) : []);
  problems.push(...pod.problems);
  if (!checked.ok || problems.length > 0) throw invalidConfig(problems);

  const value = checked.value as Record<string, unknown>;
  const config = Object.fromEntries(
    KEPT.filter((k) => value[k] !== undefined).map((k) => [k, value[k]]),
  ) as PluginConfig;
  const nodeOptions = NODE_OPTIONS.filter((k) => doc[k] !== undefined).map((k) => [k, doc[k]]);
  if (nodeOptions.length > 0) config.nodeOptions = Object.fromEntries(nodeOptions);
  if (pod.announce !== undefined) config.podAnnounce = pod.announce;
  if ('prevResult' in doc) config.prevResult = doc.prevResult;
  const lists = ATTACHMENT_KEYS.map((k) => value[k] as { containerID: string; ifname: string }[] | undefined);
  if (lists.some((l) => l !== undefined)) config.validAttachments = mergeAttachments(lists.flatMap((l) => l ?? []));
  const rule = burstProblem(config, pod.announce) ?? skipProblem(config);
  if (rule !== undefined) throw invalidConfig([rule]);
  return config;
}

/** `onUnavailable: skip` where the result depends on the announcer (skipRefusal says why). */
function skipProblem(config: PluginConfig): string | undefined {
  const why = config.onUnavailable === 'skip' ? skipRefusal(config) : undefined;
  return why && `"onUnavailable": "skip" needs a result that does not depend on the announcer, but ${why}`;
}

/**
 * The burst cap: the last round may come at most MAX_BURST_SPAN_MS after the first, so that no
 * config or pod keeps a background process alive for long (count 10, intervalMs 60000 and
 * backoff 4 would take 60 days). Checked on the conflist alone, then with the pod's overrides.
 */
function burstProblem(config: PluginConfig, pod: PodAnnounce | undefined): string | undefined {
  for (const withPod of [false, true]) {
    const at = (k: 'count' | 'intervalMs' | 'backoff') =>
      withPod && pod?.overrides[k] !== undefined
        ? { value: pod.overrides[k], name: overrideName(pod.from[k], k) }
        : { value: config[k], name: `"${k}"` };
    const [count, intervalMs, backoff] = [at('count'), at('intervalMs'), at('backoff')];
    const span = burstSpanMs(count.value, intervalMs.value, backoff.value);
    if (span > MAX_BURST_SPAN_MS) {
      return (
        `${count.name} ${count.value}, ${intervalMs.name} ${intervalMs.value} and ${backoff.name} ${backoff.value} ` +
        `put the last round ${formatSpan(span)} after the first ` +
        '(the sum of intervalMs × backoff^k for k < count - 1); ' +
        `a burst may last at most ${formatSpan(MAX_BURST_SPAN_MS)}`
      );
    }
  }
  return undefined;
}

/** `"args.cni.announce.count"`; a channel whose name holds quotes (the annotation's) is not quoted again. */
function overrideName(channel: string | undefined, key: string): string {
  const name = `${channel ?? ''}.${key}`;
  return name.includes('"') ? name : `"${name}"`;
}

/** 600000 → "10 min"; 5242820000 → "60 days". Only spans of the cap or more are written: none below a minute. */
function formatSpan(ms: number): string {
  const units = [
    ['days', 86_400_000],
    ['h', 3_600_000],
  ] as const;
  const [unit, size] = units.find(([, size]) => ms >= size) ?? ['min', 60_000];
  return `${Math.round((ms / size) * 10) / 10} ${unit}`;
}

/** GC's attachments, each once, where first listed. */
function mergeAttachments(entries: readonly { containerID: string; ifname: string }[]): Attachment[] {
  const byKey = new Map(
    entries.map((e) => [`${e.containerID}\u0000${e.ifname}`, { containerId: e.containerID, ifname: e.ifname }]),
  );
  return [...byKey.values()];
}
