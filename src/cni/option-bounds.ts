// Pure: the option values known without validating a config, and so without zod: the shim (the
// CNI process's fast path) reads them from a raw config to find its announcer (stateDir's default)
// and to size its wait (src/shim/wire.ts), and they bound how long an ADD may hold its
// attachment's lock (src/announce/attachment-lock.ts). The options' table (option-schema.ts) takes
// them from here.

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
