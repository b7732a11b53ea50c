// What `announcer schema` prints (src/cli.ts): the JSON Schema of the plugin's entry in a conflist, for editors and
// NAD tooling. zod's own toJSONSchema makes it from the schemas parseConfig checks with (OPTIONS): types, ranges,
// choices, patterns and defaults. One line per option describes it (editors show them on hover), typed by OPTIONS'
// keys: an option without its line, or a line without its option, fails the type check. What JSON Schema cannot
// express, the descriptions name: the rules across fields (the burst cap, the configs onUnavailable skip is refused
// with) in the entry's own, and an interface name's rules, checked by a function, in that of interfaces. The plugin
// applies them all.
import { optional, toJSONSchema } from 'zod/mini';
import { MAX_IFNAME_BYTES } from '../cni/env';
import { optionFields, type OPTIONS } from '../cni/option-schema';
import { bool, obj, str } from '../cni/zod-checks';
import { MAX_BURST_SPAN_MS } from '../plan';

/**
 * The conflist entry: its `type`, the capabilities it may declare, and every option; unknown fields are tolerated, as
 * the plugin does.
 */
export function entrySchema() {
  const capabilities = obj({ mac: optional(bool()), 'io.kubernetes.cri.pod-annotations': optional(bool()) });
  return obj({ type: str(), capabilities: optional(capabilities), ...optionFields() });
}

/**
 * The entry's JSON Schema, draft-07: ajv's default draft, and the one editors (VS Code's JSON
 * service, yaml-language-server) support fully. Options with a default are optional and carry it.
 */
export function entryJsonSchema(): Record<string, unknown> {
  const schema = toJSONSchema(entrySchema(), { target: 'draft-07', io: 'input' }) as {
    $schema: string;
    properties: Record<string, object>;
  };
  const { $schema, ...rest } = schema;
  for (const [key, description] of Object.entries(OPTION_DOCS))
    schema.properties[key] = { description, ...schema.properties[key] };
  return { $schema, title: 'cni-announcer', description: ENTRY_DOC, ...rest };
}

/** How a node option's line starts: a conflist may carry it, and it is ignored there. */
const NODE = "Ignored here, logged: a node setting (the stateDir's announcer.conf, or the announcer's flag";

/** The burst cap, a rule across count, intervalMs and backoff (src/cni/config.ts), in short. */
const BURST_CAP = `the last round comes at most ${MAX_BURST_SPAN_MS / 60_000} min after the first (the burst cap)`;

/** The burst cap in full: what is summed, and with whose values. */
export const BURST_RULE =
  `the burst cap: the sum of intervalMs × backoff^k for k < count - 1 is at most ${MAX_BURST_SPAN_MS} ms ` +
  `(the last round at most ${MAX_BURST_SPAN_MS / 60_000} min after the first), with the conflist's values and ` +
  'again with what a pod may change (podOverrides)';

/** The configs `onUnavailable: skip` is refused with (src/cni/config.ts): their result depends on the announcer. */
export const SKIP_RULE =
  'onUnavailable "skip" only where the result cannot depend on the announcer: not with mac "ip-derived", ' +
  'conflictCheck "fail", gatewayCheck "require", or a podOverrides naming "mac" or "gatewayCheck"';

/** A Linux interface name's rules (ifnameProblem, src/cni/env.ts), checked by a function. */
export const IFNAME_RULE =
  `each a Linux interface name: 1 to ${MAX_IFNAME_BYTES} bytes of UTF-8, not "." or "..", ` +
  'without "/", ":" or whitespace';

/** The entry's own description: what it is, and the rules across fields the plugin enforces besides the schema. */
export const ENTRY_DOC =
  "The announcer's entry in a CNI conflist's plugins. The plugin also enforces rules across fields that this " +
  `schema cannot express (code 7): ${BURST_RULE}; and ${SKIP_RULE}.`;

/** What each option does, in a line. */
export const OPTION_DOCS: Record<keyof typeof OPTIONS, string> = {
  ipv4: 'Send a gratuitous ARP for each IPv4 address.',
  ipv6: 'Send an unsolicited NA for each IPv6 address.',
  arpOp:
    'request: RFC 5227 announcement (op 1); reply: op 2 with target MAC = sender MAC; ' +
    'both: one of each per address and round.',
  mac: "ip-derived: set the pod interface's MAC from its first address before announcing.",
  macPrefix: 'The first two bytes of derived MACs; the multicast bit (0x01) must be clear.',
  count:
    'Rounds; 0 sends nothing. One round is one GARP per IPv4 address and ARP op, one NA per IPv6 address; ' +
    `${BURST_CAP}.`,
  intervalMs: `The gap between round 1 and round 2, in milliseconds; ${BURST_CAP}.`,
  backoff: `Gap k is intervalMs × backoff^k; ${BURST_CAP}.`,
  probeMs: "The conflict probe's listening window, in milliseconds.",
  probes: 'ARP probes sent per address, spread over the window.',
  gatewayCheck:
    'After round 1, ask each routed gateway for its MAC from inside the pod (ARP, NS): off; report; ' +
    'require: ADD fails without an answer.',
  gatewayCheckMs: 'How long gatewayCheck require makes ADD wait for an answer, in milliseconds.',
  interfaces: `Announce only the pod interfaces named here (default: all); ${IFNAME_RULE}.`,
  addWaitMs: 'The longest ADD waits for readiness before it returns, in milliseconds.',
  readyTimeoutMs: "Readiness is awaited until ADD's start + this, in milliseconds.",
  conflictCheck:
    'Probe each IPv4 address before announcing it (RFC 5227): warn leaves a conflicting one out, fail fails ADD.',
  onUnavailable:
    'When the announcer cannot answer: fail (ADD and CHECK code 11, STATUS 50), or skip (ADD prints prevResult ' +
    `unannounced, CHECK and STATUS exit 0, each with a WARN); ${SKIP_RULE}.`,
  stateDir: "State records, locks and the announcer's socket: a directory only root can write.",
  logFile: 'Log file (appended, created 0600); without it, nothing is logged.',
  logLevel: 'The lowest level written.',
  podOverrides: "What a pod's args.cni.announce may change: option names, or enabled=false, mac=keep.",
  rateLimit: `${NODE} --rate-limit): one node-wide budget for every frame sent through this stateDir.`,
  idleExitMs: `${NODE} --idle-exit-ms): an announcer started on demand exits after this long without work.`,
  metricsFile: `${NODE} --metrics-file): where the announcer writes its counters in the Prometheus text format.`,
};
