// The status-under-load scenario, shared by its integration test and `make
// bench`: stand-in pods ADDed in batches under a node-wide rate limit, while
// a `status` request goes to the announcer's socket every `statusEveryMs`,
// until every pod's rounds are sent or dropped (the announcer's log says).
import { announcerAdd, announcerDel, attachmentOf, type AnnouncerAttachment } from './announcer';
import { announcerFiles, logRecords } from './announcer-files';
import { createBridge } from './bridge';
import { startCapture } from './capture';
import { assertCniOk } from './cni';
import { waitDaemonGone } from './daemon';
import { allocSubnet } from './names';
import type { Scope } from './scope';
import { createStandInFleet, type FleetPod } from './stand-in-fleet';
import { startStatusProber, type StatusProbe } from './status-prober';
import type { Frame } from './tshark';
import { waitFor } from './wait';

/** The scenario's shape. */
export interface StatusLoad {
  prefix: string;
  network: string;
  pods: number;
  batch: number;
  rateLimit: { framesPerSecond: number; burst: number };
  /** Rounds per pod, 1 s apart. */
  count: number;
  statusEveryMs: number;
}

/** What a run saw. */
export interface StatusLoadRun {
  pods: FleetPod[];
  atts: AnnouncerAttachment[];
  probes: StatusProbe[];
  frames: Frame[];
  /** The announcer's log (every round's line). */
  log: string;
}

/** Per containerId, the outcomes of its rounds as the announcer logged them ('announced N' or 'dropped N'). */
export function roundsLogged(log: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of logRecords(log)) {
    const what = r.msg === 'announced' ? 'announced' : r.msg.startsWith('round dropped:') ? 'dropped' : undefined;
    const id = String(r.fields.containerId);
    if (what) out.set(id, [...(out.get(id) ?? []), `${what} ${r.fields.round ?? '?'}`]);
  }
  return out;
}

/**
 * Runs the scenario to its end (every round sent or dropped), then DELs every pod and waits for the announcer to go.
 * (A test adds killStrays; the bench runs its own announcer meanwhile.)
 */
export async function runStatusLoad(s: Scope, load: StatusLoad): Promise<StatusLoadRun> {
  const files = await announcerFiles(s);
  const net = allocSubnet();
  const bridge = await createBridge(s, { v4Cidr: net.v4Cidr(1), prefix: load.prefix });
  const hosts = Array.from({ length: load.pods }, (_, i) => 10 + i);
  const pods = await createStandInFleet(s, { prefix: load.prefix, net, bridge, hosts });
  const capture = await startCapture(s, { iface: bridge, filter: 'arp' });
  const options = {
    logLevel: 'info',
    idleExitMs: 2000,
    rateLimit: load.rateLimit,
    count: load.count,
    intervalMs: 1000,
  };
  const atts = pods.map((pod, i) =>
    attachmentOf(pod, files, { network: load.network, containerId: `${load.prefix}-pod${i}`, options }),
  );
  // The first ADD starts the announcer; from then on, status every statusEveryMs until every burst is over.
  assertCniOk(`announcer ADD ${atts[0]!.containerId}`, await announcerAdd(s, atts[0]!));
  const prober = startStatusProber(files.stateDir, load.statusEveryMs);
  let probes: StatusProbe[] | undefined;
  s.defer(async () => void (probes ?? (await prober.stop())), 'status prober');
  for (let i = 1; i < load.pods; i += load.batch)
    for (const res of await Promise.all(atts.slice(i, i + load.batch).map((att) => announcerAdd(s, att))))
      assertCniOk('announcer ADD', res);
  await waitFor(async () => [...roundsLogged(await files.log()).values()].flat().length >= load.pods * load.count, {
    timeoutMs: 60_000,
    intervalMs: 200,
    what: 'every round of every pod sent or dropped',
  });
  probes = await prober.stop();
  const frames = await capture.stop();
  const log = await files.log();
  for (let i = 0; i < load.pods; i += load.batch)
    for (const res of await Promise.all(atts.slice(i, i + load.batch).map((att) => announcerDel(att))))
      assertCniOk('announcer DEL', res);
  await waitDaemonGone(files.stateDir, 10_000);
  return { pods, atts, probes, frames, log };
}
