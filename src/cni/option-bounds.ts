// Pure: the option values the shim reads from a raw config, without validation, to size its wait
// (src/shim/wire.ts), and that bound how long an ADD may hold its attachment's lock
// (src/announce/attachment-lock.ts). The options' table (option-schema.ts) takes them from here.

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
