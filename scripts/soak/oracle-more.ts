// The oracle's last required row (the end of the run) and the soak's own rows: calls that failed with no fault to
// excuse them, rounds beyond the planned ones, stops longer than the DaemonSet's grace period. And `judge`, every row.
import { delServed } from './calls';
import {
  addressesOf,
  afterDelRow,
  callsOf,
  callText,
  deadlineRow,
  delTime,
  type Excuses,
  excusesOf,
  failedAddRow,
  framesOf,
  KILL_REACH_MS,
  killedDuring,
  type OracleInput,
  overlapsStop,
  type Row,
  row,
  roundOneRow,
  stopsDuring,
  type Violation,
} from './oracle';
import type { CallRecord, Cycle } from './model';
import { announces, plannedRounds } from './profile';
import type { BuiltFrame } from './frames';

/** A netns kept alive: when it was deleted, and when it was freed after all, next to the announcer stops before. */
function keptText(c: Cycle, input: OracleInput): string {
  const rel = (t: number): string => `+${((t - input.startedAt) / 1000).toFixed(3)} s`;
  const deleted = c.netnsDeletedAt === undefined ? '' : `, deleted at ${rel(c.netnsDeletedAt)}`;
  const freedAt = c.netnsFreedAt;
  if (freedAt === undefined) return `its netns was not freed within 5 s of ip netns del${deleted}, nor later`;
  const near = input.stops.filter((s) => s.at <= freedAt && s.at >= freedAt - 1000);
  const who = near.map((s) => `pid ${s.pid} stopped (${s.why}) at ${rel(s.at)}`).join(', ');
  const freed = `; freed at ${rel(freedAt)}${who === '' ? '' : `, right after ${who}`}`;
  return `its netns was not freed within 5 s of ip netns del${deleted}${freed}`;
}

/** 5. At the end: no record, no announcer, no netns kept alive, and every MAC the plugin set restored. */
function endRow(input: OracleInput): Row {
  const { end, cycles } = input;
  const v: Violation[] = [
    ...end.left.map((f) => ({ at: end.at, what: `left in stateDir: ${f}` })),
    ...end.announcers.map((p) => ({ at: end.at, what: `still running after its idle exit was due: ${p}` })),
    ...end.markers.map((m) => ({ at: end.at, what: `netns marker ${m} still there: a pod's netns is kept alive` })),
  ];
  for (const c of cycles) {
    if (c.netnsFreedMs === 'kept') v.push({ at: c.end ?? end.at, pod: c.containerId, what: keptText(c, input) });
    if (c.add !== undefined && c.macAfterDel !== undefined && c.macAfterDel !== c.originalMac) {
      const what = `eth0 has ${c.macAfterDel} once DEL was served; the bridge plugin gave it ${c.originalMac}`;
      v.push({ at: delTime(c) ?? end.at, pod: c.containerId, what });
    }
  }
  const label = 'at the end: no record, no announcer, no netns kept alive, every MAC restored';
  return row(label, true, cycles.length + 3, v);
}

/** Whether a fault excuses the call's failure: it overlapped a SIGSTOP, or a SIGKILL came while it ran. */
function excused(r: CallRecord, e: Excuses): boolean {
  return overlapsStop(r, e) || killedDuring(r.start - KILL_REACH_MS, r.end, e);
}

/** The soak's own: no call failed (or DEL left unserved) without a SIGSTOP or SIGKILL to excuse it. */
function failedCallsRow(input: OracleInput, e: Excuses): Row {
  const calls = input.cycles.flatMap(callsOf);
  const failed = (r: CallRecord): boolean => (r.command === 'DEL' ? !delServed(r) : r.code !== 0);
  const v: Violation[] = calls
    .filter((r) => failed(r) && !excused(r, e))
    .map((r) => ({
      at: r.start,
      pod: r.pod,
      what: `failed, no SIGSTOP or SIGKILL meanwhile: ${callText(r)}${stopsDuring(r, input)}`,
    }));
  for (const c of input.cycles.filter((c) => c.dels.length > 0 && c.delServedAt === undefined))
    v.push({ at: c.dels[0]!.start, pod: c.containerId, what: `DEL never served in ${c.dels.length} tries` });
  return row('no call fails, and no DEL stays unserved, without a SIGSTOP or SIGKILL', false, calls.length, v);
}

/** One cycle's frames beyond its plan: per address, rounds (+ the kernel's MAC-change GARP), and asks when silent. */
function beyondPlan(c: Cycle, fs: readonly BuiltFrame[]): Violation[] {
  const add = c.add!;
  const until = delTime(c) ?? Number.POSITIVE_INFINITY;
  const mac = c.resultMac ?? (c.profile.ipDerived ? c.derivedMac! : c.originalMac!);
  const planned = plannedRounds(c.profile);
  // A deferred pod's port is held when its MAC changes: the bridge drops that kernel GARP.
  const kernelGarp = c.profile.ipDerived && !c.profile.deferred;
  const v: Violation[] = [];
  for (const [ip, kind, kernel] of addressesOf(c, kernelGarp)) {
    const n = framesOf(fs, kind, ip, mac, add.start, until).length;
    if (n > planned + kernel) {
      const what = `${n} ${kind} for ${ip} from ${mac} between ADD and DEL; ${planned} rounds planned`;
      v.push({ at: add.start, pod: c.containerId, what: `${what}${kernel ? ' (+1 kernel GARP)' : ''}` });
    }
  }
  const asks = fs.filter((f) => f.kind.startsWith('gateway') && f.t >= add.start && f.t <= until);
  if (!announces(c.profile) && asks.length > 0)
    v.push({
      at: asks[0]!.t,
      pod: c.containerId,
      what: `${asks.length} gateway asks from a pod that announces nothing`,
    });
  return v;
}

/** The soak's own: no pod sends more than its plan between ADD and DEL (a SIGKILL may repeat a round: exempt). */
function plannedRow(input: OracleInput, e: Excuses): Row {
  const checked = input.cycles.filter(
    (c) => c.add !== undefined && c.originalMac !== undefined && !killedDuring(c.add.start, delTime(c) ?? c.add.end, e),
  );
  const v = checked.flatMap((c) => beyondPlan(c, input.framesOf.get(c) ?? []));
  return row('no pod sends more rounds than planned (a SIGKILL between ADD and DEL exempts)', false, checked.length, v);
}

/** The soak's own: every stop the soak asked for with SIGTERM ended within the DaemonSet's grace period. */
function stopsRow(input: OracleInput): Row {
  const stops = input.faults.filter((f) => f.stopMs !== undefined);
  const v = stops
    .filter((f) => f.killedAt !== undefined || f.stopMs! > input.graceMs)
    .map((f) => ({ at: f.at, what: `${f.kind}: ${f.detail}` }));
  return row(`every SIGTERMed announcer exits within the grace period (${input.graceMs} ms)`, false, stops.length, v);
}

/** Every row, the issue's first. */
export function judge(input: OracleInput): Row[] {
  const e = excusesOf(input.faults);
  return [
    deadlineRow(input, e),
    roundOneRow(input),
    failedAddRow(input),
    afterDelRow(input),
    endRow(input),
    failedCallsRow(input, e),
    plannedRow(input, e),
    stopsRow(input),
  ];
}
