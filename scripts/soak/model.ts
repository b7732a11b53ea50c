// What a soak run records: the calls it made (CNI results are half of the oracle), each pod's cycle from the bridge
// plugin's ADD to its netns gone, and the faults the chaos schedule caused. Plain data: the oracle reads it afterwards.

/** The faults of the chaos schedule, each acting on the announcer. */
export const FAULT_KINDS = ['SIGTERM', 'SIGKILL', 'SIGSTOP', 'idle exit', 'upgrade', 'resident replaced'] as const;
/** One kind of fault. */
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The CNI commands the load sends through the announcer. */
export type CallCommand = 'ADD' | 'CHECK' | 'DEL';

/** One CNI call of the announcer, as the runtime saw it. */
export interface CallRecord {
  pod: string;
  command: CallCommand;
  /** 1 for the first try; a DEL not served is tried again, as kubelet does. */
  attempt: number;
  /** Wall clock (ms) just before the process was started, and once it had exited. */
  start: number;
  end: number;
  /** Exit status; -1 when the process never returned within the harness's bound (then `lost` says why). */
  code: number;
  stdout: string;
  stderr: string;
  json?: any;
  lost?: string;
}

/** How one pod of the load is made and driven, drawn from the worker's seeded stream. */
export interface Profile {
  /** `mac: ip-derived`. */
  ipDerived: boolean;
  /** An IPv6 address too. */
  ipv6: boolean;
  /** Its routes go through the gateway netns (the gateway check asks it); else no route at all. */
  routed: boolean;
  /** Its bridge port is held in `listening` over the ADD, so ADD returns before round 1 (released later). */
  deferred: boolean;
  /** Announces (`yes`), `count: 0`, or opted out through `args.cni.announce: false`. */
  announce: 'yes' | 'count0' | 'optout';
  count: number;
  intervalMs: number;
  addWaitMs: number;
  readyTimeoutMs?: number;
  /** After ADD, how long the port stays held (deferred pods). */
  releaseAfterMs: number;
  /** How many CHECKs follow the ADD, and the pause before each. */
  checkPausesMs: number[];
  /** How long the pod lives after its ADD (and CHECKs) before its DEL. */
  holdMs: number;
}

/** One pod's life on the bridge: one announcer ADD, its CHECKs, and its DEL until served. */
export interface Cycle {
  worker: number;
  seq: number;
  containerId: string;
  profile: Profile;
  ip4: string;
  ip6?: string;
  /** The MAC the bridge plugin gave eth0, and the IP-derived one (mac: ip-derived). */
  originalMac?: string;
  derivedMac?: string;
  /** The pod interface's MAC in the ADD's result. */
  resultMac?: string;
  /** Before the bridge plugin's ADD: frames from then on belong to this cycle. */
  start: number;
  add?: CallRecord;
  releasedAt?: number;
  checks: CallRecord[];
  dels: CallRecord[];
  /** When the DEL that the announcer answered had exited. */
  delServedAt?: number;
  /** eth0's MAC once the DEL was served. */
  macAfterDel?: string;
  /** How long after `ip netns del` the pod's netns was freed; `kept` when still alive after the bound. */
  netnsFreedMs?: number | 'kept';
  /** When the netns was deleted, and (for one kept alive) when it was freed after all, if it was. */
  netnsDeletedAt?: number;
  netnsFreedAt?: number;
  /** The netns's inode, and (for one kept alive) the announcer threads found in it. */
  netnsIno?: number;
  netnsHeldBy?: string[];
  /** Anything that stopped the cycle short (setup failure, abort). */
  problem?: string;
  end?: number;
}

/** One fault the chaos schedule caused (or tried to). */
export interface FaultRecord {
  kind: FaultKind;
  /** When it acted on the announcer (the signal, the rename, the quiet start), and when its action ended. */
  at: number;
  end: number;
  pid?: number;
  /** It happened as intended, so it counts toward the minimum. */
  counted: boolean;
  detail: string;
  /** For a stop caused by a signal: how long the announcer took to exit, and whether it had to be SIGKILLed. */
  stopMs?: number;
  killedAt?: number;
}

/** How a fault is timed against the load: whenever, or once a call (or an ADD) has run a while. */
export type Moment = 'any time' | 'a call in flight' | 'an ADD in flight';

/**
 * One step of the chaos schedule, drawn whole from the seed before it acts (so a step that could not act draws no
 * more or fewer numbers than one that could: the schedule stays the seed's).
 */
export interface FaultPlan {
  /** The pause before it. */
  gapMs: number;
  /** The kind it is when the schedule owes none. */
  extra: FaultKind;
  moment: Moment;
  /** SIGSTOP: how long the announcer stays stopped. */
  holdMs: number;
  /** Idle exit: release the waiting ADDs when the exit is due, not after it (never the run's first), and how late. */
  race: boolean;
  lateMs: number;
  /** Resident: how long it serves before kubelet stops it. */
  serveMs: number;
}

/** A span of time during which the announcer was stopped (SIGSTOP … SIGCONT). */
export interface Span {
  from: number;
  to: number;
}
