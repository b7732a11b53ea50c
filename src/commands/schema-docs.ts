// One line per option for `announcer schema`'s descriptions (editors show them on hover). Typed
// by OPTIONS' keys: an option without its line, or a line without its option, fails the type check.
import type { OPTIONS } from '../cni/option-schema';

/** How a node option's line starts: a conflist may carry it, and it is ignored there. */
const NODE = "Ignored here, logged: a node setting (the stateDir's announcer.conf, or the announcer's flag";

/** What each option does, in a line. */
export const OPTION_DOCS: Record<keyof typeof OPTIONS, string> = {
  ipv4: 'Send a gratuitous ARP for each IPv4 address.',
  ipv6: 'Send an unsolicited NA for each IPv6 address.',
  arpOp:
    'request: RFC 5227 announcement (op 1); reply: op 2 with target MAC = sender MAC; ' +
    'both: one of each per address and round.',
  mac: "ip-derived: set the pod interface's MAC from its first address before announcing.",
  macPrefix: 'The first two bytes of derived MACs; the multicast bit (0x01) must be clear.',
  count: 'Rounds; 0 sends nothing. One round is one GARP per IPv4 address and ARP op, one NA per IPv6 address.',
  intervalMs: 'The gap between round 1 and round 2, in milliseconds.',
  backoff: 'Gap k is intervalMs × backoff^k; the last round may come at most 10 min after the first.',
  probeMs: "The conflict probe's listening window, in milliseconds.",
  probes: 'ARP probes sent per address, spread over the window.',
  gatewayCheck:
    'After round 1, ask each routed gateway for its MAC from inside the pod (ARP, NS): off; report; ' +
    'require: ADD fails without an answer.',
  gatewayCheckMs: 'How long gatewayCheck require makes ADD wait for an answer, in milliseconds.',
  interfaces: 'Announce only the pod interfaces named here (default: all).',
  addWaitMs: 'The longest ADD waits for readiness before it returns, in milliseconds.',
  readyTimeoutMs: "Readiness is awaited until ADD's start + this, in milliseconds.",
  conflictCheck:
    'Probe each IPv4 address before announcing it (RFC 5227): warn leaves a conflicting one out, fail fails ADD.',
  onUnavailable: 'When the announcer cannot answer: fail (ADD code 11), or skip (prevResult unannounced, with a WARN).',
  stateDir: "State records, locks and the announcer's socket: a directory only root can write.",
  logFile: 'Log file (appended, created 0600); without it, nothing is logged.',
  logLevel: 'The lowest level written.',
  podOverrides: "What a pod's args.cni.announce may change: option names, or enabled=false, mac=keep.",
  rateLimit: `${NODE} --rate-limit): one node-wide budget for every frame sent through this stateDir.`,
  idleExitMs: `${NODE} --idle-exit-ms): an announcer started on demand exits after this long without work.`,
  metricsFile: `${NODE} --metrics-file): where the announcer writes its counters in the Prometheus text format.`,
};
