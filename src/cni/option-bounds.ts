// Pure, loaded without zod: the option values the shim reads from a raw config, without validation, to size its wait
// (src/protocol.ts), and that bound how long an ADD may hold its attachment's lock; the options' table
// (option-schema.ts) takes them from here. And the one rule of `onUnavailable: skip`, which the shim applies to a raw
// config and the announcer's config check to a parsed one.

/** `stateDir`'s default: the announcer a config without `stateDir` goes to. */
export const DEFAULT_STATE_DIR = '/run/cni-announcer';
/** `addWaitMs`'s default. */
export const DEFAULT_ADD_WAIT_MS = 2000;
/** `probeMs`'s default. */
export const DEFAULT_PROBE_MS = 100;
/** `probeMs`'s largest value. */
export const MAX_PROBE_MS = 2000;
/** `gatewayCheckMs`'s default. */
export const DEFAULT_GATEWAY_CHECK_MS = 1000;
/** `gatewayCheckMs`'s largest value. */
export const MAX_GATEWAY_CHECK_MS = 10000;

/**
 * Why `onUnavailable: skip` cannot hold for `config` (raw or parsed: the fields are the same), its result depending on
 * the announcer: an IP-derived MAC, conflictCheck fail, gatewayCheck require, or a pod allowed to ask for mac or
 * gatewayCheck. Undefined when skip holds.
 */
export function skipRefusal(config: Record<string, unknown>): string | undefined {
  const overrides = Array.isArray(config.podOverrides) ? config.podOverrides : [];
  const reasons: [boolean, string][] = [
    [config.mac === 'ip-derived', '"mac" is "ip-derived"'],
    [config.conflictCheck === 'fail', '"conflictCheck" is "fail"'],
    [config.gatewayCheck === 'require', '"gatewayCheck" is "require"'],
    [overrides.includes('mac'), '"podOverrides" lets a pod ask for "mac"'],
    [overrides.includes('gatewayCheck'), '"podOverrides" lets a pod ask for "gatewayCheck"'],
  ];
  return reasons.find(([applies]) => applies)?.[1];
}
