// Pure: the background announcer's counters, as `announcer status` shows them
// (src/daemon/metrics.ts gives them to Prometheus).
import type { FrameCounts } from '../announce/round';
import type { GatewayResult, GatewayVerdict } from '../announce/gateway-verdict';

/** Everything counted since the background announcer started. */
export interface Counters {
  frames: FrameCounts;
  rounds: { sent: number; skippedNotReady: number; skippedLate: number };
  /** How deferred waits ended. */
  deferred: { started: number; ready: number; timedOut: number; gone: number };
  rateLimited: { delayed: number; dropped: number };
  /** IPv4 addresses left unannounced because another host answered for them (conflictCheck). */
  conflicts: number;
  errors: number;
  /** The gateway check: asks made in the loop, requests sent, and attachments by final verdict. */
  gateway: { asks: number; requests: number } & Record<GatewayCount, number>;
  /** What the node-local proof found wrong, by kind. */
  nodeMismatches: { duplicateMac: number; staleNeighbour: number; notLearned: number };
  /** The CNI commands this announcer took to run, by CNI_COMMAND (it is their one executor). */
  served: Record<ServedCommand, number>;
}

/** The CNI commands the announcer runs (VERSION is the shim's own). */
export const SERVED_COMMANDS = ['ADD', 'DEL', 'CHECK', 'GC', 'STATUS'] as const;
/** One of SERVED_COMMANDS. */
export type ServedCommand = (typeof SERVED_COMMANDS)[number];

/** All zero. */
export function newCounters(): Counters {
  return {
    frames: { garpRequest: 0, garpReply: 0, na: 0 },
    rounds: { sent: 0, skippedNotReady: 0, skippedLate: 0 },
    deferred: { started: 0, ready: 0, timedOut: 0, gone: 0 },
    rateLimited: { delayed: 0, dropped: 0 },
    conflicts: 0,
    errors: 0,
    gateway: { asks: 0, requests: 0, answered: 0, noAnswer: 0, noGateway: 0, off: 0 },
    nodeMismatches: { duplicateMac: 0, staleNeighbour: 0, notLearned: 0 },
    served: { ADD: 0, DEL: 0, CHECK: 0, GC: 0, STATUS: 0 },
  };
}

/** Counts a CNI command taken to run; another CNI_COMMAND (dispatch refuses it) is not counted. */
export function countServed(counters: Counters, command: string | undefined): void {
  const known = SERVED_COMMANDS.find((c) => c === command);
  if (known) counters.served[known]++;
}

/** The final verdicts counted, as Counters fields. */
export type GatewayCount = 'answered' | 'noAnswer' | 'noGateway' | 'off';
const VERDICT_FIELDS: Record<Exclude<GatewayResult, 'pending'>, GatewayCount> = {
  answered: 'answered',
  'no-answer': 'noAnswer',
  'no-gateway': 'noGateway',
  off: 'off',
};

/** Counts one attachment's final gateway verdict (a pending one is not counted). */
export function countVerdict(counters: Counters, verdict: GatewayVerdict): void {
  if (verdict.result !== 'pending') counters.gateway[VERDICT_FIELDS[verdict.result]]++;
}

/** Adds `sent` to the frame counters. */
export function addFrames(counters: Counters, sent: FrameCounts): void {
  for (const kind of ['garpRequest', 'garpReply', 'na'] as const) counters.frames[kind] += sent[kind];
}
