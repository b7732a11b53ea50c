// One worker of the load: pod after pod on the bridge, each a fresh netns that the real bridge plugin attaches, then
// the announcer chained after it as a runtime chains it: ADD, CHECKs, a while alive, DEL until the announcer has
// answered it (kubelet tries a DEL again; libcni DELs after a failed ADD too), then the bridge plugin's DEL and the
// netns deleted. Each pod's profile comes from the worker's own seeded stream.
import { podInterface } from '../../test/integration/harness/cni';
import { setPortState } from '../../test/integration/harness/port-hold';
import type { Scope } from '../../test/integration/harness/scope';
import { type Attachment, type CallTarget, cniCall, delServed, delUntilServed } from './calls';
import type { Gate } from './gate';
import type { Cycle, Profile } from './model';
import {
  announcerThreadsIn,
  hostOf,
  ipDerivedMac,
  netnsFreed,
  podMac,
  preparePod,
  type SoakNetwork,
  watchFreed,
} from './pods';
import { announcerOptions, drawProfile } from './profile';
import { rngFor } from './rng';
import { pause } from './time';

/** How long a pod's DEL is tried before the soak gives up on it (each try is bounded by the shim's 2 s). */
const DEL_SERVED_WITHIN_MS = 60_000;
/** The same once the run is aborted (Ctrl-C): cleanup comes first. */
const DEL_ON_ABORT_MS = 10_000;

/** The watchers of netns kept alive past the bound, and the signal that ends them once the run looked at its end. */
export interface KeptNetns {
  watchers: Promise<void>[];
  ended: AbortSignal;
}

/** What a worker runs with. */
export interface WorkerContext {
  seed: number;
  scope: Scope;
  signal: AbortSignal;
  sn: SoakNetwork;
  target: CallTarget;
  gate: Gate;
  cycles: Cycle[];
  kept: KeptNetns;
  /** No new pod once true. */
  stopping(): boolean;
}

/** Runs worker `worker`'s pods until the run stops. */
export async function runWorker(ctx: WorkerContext, worker: number): Promise<void> {
  const rng = rngFor(ctx.seed, `worker ${worker}`);
  ctx.gate.running(worker, true);
  try {
    for (let seq = 0; !ctx.stopping() && !ctx.signal.aborted; seq++) await runCycle(ctx, worker, seq, drawProfile(rng));
  } finally {
    ctx.gate.running(worker, false);
  }
}

async function runCycle(ctx: WorkerContext, worker: number, seq: number, profile: Profile): Promise<void> {
  const { net } = ctx.sn;
  const host = hostOf(worker);
  const cycle: Cycle = {
    worker,
    seq,
    containerId: `${ctx.sn.prefix}-w${worker}-c${seq}`,
    profile,
    ip4: net.v4(host),
    start: Date.now(),
    checks: [],
    dels: [],
  };
  if (profile.ipv6) cycle.ip6 = net.v6(host);
  if (profile.ipDerived) cycle.derivedMac = ipDerivedMac(cycle.ip4);
  ctx.cycles.push(cycle);
  const cs = ctx.scope.child(`pod ${cycle.containerId}`);
  let marker: string | undefined;
  try {
    const pod = await preparePod(cs, ctx.sn, cycle);
    marker = pod.marker;
    await ctx.gate.pass(worker);
    if (ctx.signal.aborted) return;
    const att: Attachment = {
      containerId: cycle.containerId,
      netns: pod.netns.path,
      network: { name: pod.conf.name, cniVersion: pod.conf.cniVersion },
      prevResult: pod.result,
      options: announcerOptions(profile),
    };
    await drive(ctx, cycle, att, pod.hostVeth);
    cycle.macAfterDel = await podMac(pod.netns.name);
  } catch (err) {
    problem(cycle, err);
  } finally {
    await closeCycle(cycle, cs, marker, ctx.kept);
  }
}

/** The announcer's part of a cycle: ADD, the release of a held port, CHECKs, the pod's life, DEL until served. */
async function drive(ctx: WorkerContext, cycle: Cycle, att: Attachment, hostVeth: string): Promise<void> {
  const { profile } = cycle;
  const add = await cniCall(ctx.target, att, 'ADD');
  cycle.add = add;
  const ok = add.code === 0 && add.json !== undefined;
  if (ok) {
    // The runtime caches the chain's result and gives it to CHECK and DEL as prevResult.
    att.prevResult = add.json;
    const mac = podInterface(add.json)?.mac;
    if (mac !== undefined) cycle.resultMac = mac;
  }
  if (profile.deferred) {
    await pause(profile.releaseAfterMs, ctx.signal);
    await setPortState(hostVeth, 'forwarding');
    cycle.releasedAt = Date.now();
  }
  for (const ms of ok ? profile.checkPausesMs : []) {
    await pause(ms, ctx.signal);
    cycle.checks.push(await cniCall(ctx.target, att, 'CHECK'));
  }
  await pause(profile.holdMs, ctx.signal);
  const bound = ctx.signal.aborted ? DEL_ON_ABORT_MS : DEL_SERVED_WITHIN_MS;
  cycle.dels = await delUntilServed(ctx.target, att, bound, ctx.signal);
  const served = cycle.dels.find(delServed);
  if (served) cycle.delServedAt = served.end;
}

/** Watches a netns kept alive until it is freed or the run has looked at its end. */
async function watchKept(cycle: Cycle, marker: string, ended: AbortSignal): Promise<void> {
  const at = await watchFreed(marker, ended);
  if (at !== undefined) cycle.netnsFreedAt = at;
}

/** Adds to the cycle's problems (a harness step that failed). */
function problem(cycle: Cycle, err: unknown): void {
  const text = err instanceof Error ? err.message : String(err);
  cycle.problem = cycle.problem === undefined ? text : `${cycle.problem}; ${text}`;
}

/** The bridge plugin's DEL and the netns deleted (the cycle's scope), then how soon the netns was freed. */
async function closeCycle(cycle: Cycle, cs: Scope, marker: string | undefined, kept: KeptNetns): Promise<void> {
  for (const e of await cs.close()) problem(cycle, e);
  try {
    if (marker !== undefined) {
      cycle.netnsDeletedAt = Date.now();
      cycle.netnsFreedMs = await netnsFreed(marker, cycle.netnsDeletedAt);
      if (cycle.netnsFreedMs === 'kept') {
        if (cycle.netnsIno !== undefined) cycle.netnsHeldBy = await announcerThreadsIn(cycle.netnsIno);
        kept.watchers.push(watchKept(cycle, marker, kept.ended));
      }
    }
  } catch (err) {
    problem(cycle, err);
  }
  cycle.end = Date.now();
}
