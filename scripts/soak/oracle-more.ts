// The oracle's last required row (the end of the run) and the soak's own rows: calls that failed with no fault to
// excuse them, rounds beyond the planned ones, stops longer than the DaemonSet's grace period. And `judge`, every row.
import { unanswered } from './calls';
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
  stopsWithin,
  type Violation,
} from './oracle';
import type { CallRecord, Cycle } from './model';
import { announces, plannedRounds } from './profile';
import type { BuiltFrame } from './frames';

/** A netns kept alive: when it was deleted, and when it was freed after all, next to the announcer stops before. */
function keptText(c: Cycle, input: OracleInput): string {
  const rel = (t: number): string => `+${((t - input.startedAt) / 1000).toFixed(3)} s`;
  const deleted = c.netnsDeletedAt === undefined ? '' : `, deleted at ${rel(c.netnsDeletedAt)}`;
  const held = (c.netnsHeldBy ?? []).length > 0 ? `; in it then: ${c.netnsHeldBy!.join(', ')}` : '';
  const freedAt = c.netnsFreedAt;
  if (freedAt === undefined) return `its netns was not freed within 5 s of ip netns del${deleted}${held}, nor later`;
  const near = input.stops.filter((s) => s.at <= freedAt && s.at >= freedAt - 1000);
  const who = near.map((s) => `pid ${s.pid} stopped (${s.why}) at ${rel(s.at)}`).join(', ');
  const freed = `; freed at ${rel(freedAt)}${who === '' ? '' : `, right after ${who}`}`;
  return `its netns was not freed within 5 s of ip netns del${deleted}${held}${freed}`;
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
  return row(label, 'issue', cycles.length + 3, v);
}

/** Whether a fault excuses the call's failure: it overlapped a SIGSTOP, or a SIGKILL came while it ran. */
function excused(r: CallRecord, e: Excuses): boolean {
  return overlapsStop(r, e) || killedDuring(r.start - KILL_REACH_MS, r.end, e);
}

/** Why a call is a violation of the soak's own row 6, or undefined. */
function callFault(r: CallRecord, input: OracleInput, e: Excuses): string | undefined {
  if (unanswered(r)) return excused(r, e) ? undefined : 'no answer, no SIGSTOP or SIGKILL meanwhile';
  if (r.code === 0) return undefined;
  // The announcer's own code 11 as it stops (a command it had begun and undid) is designed; any other error is not.
  const stopping = input.stops.some((s) => s.at >= r.start && s.at <= r.end);
  if (r.json?.code === 11 && stopping) return undefined;
  return r.json?.code === 11 ? "the announcer's code 11 while none stopped" : 'the announcer answered an error';
}

/**
 * The soak's own: no call is lost (each gets the announcer's answer, a DEL is served at its first try) unless a
 * SIGSTOP or SIGKILL excuses it; an error answered is code 11 from an announcer that was stopping.
 */
function failedCallsRow(input: OracleInput, e: Excuses): Row {
  const calls = input.cycles.flatMap(callsOf);
  const v: Violation[] = calls.flatMap((r) => {
    const why = callFault(r, input, e);
    return why === undefined
      ? []
      : [{ at: r.start, pod: r.pod, what: `${why}: ${callText(r)}${stopsDuring(r, input)}` }];
  });
  for (const c of input.cycles.filter((c) => c.dels.length > 0 && c.delServedAt === undefined))
    v.push({ at: c.dels[0]!.start, pod: c.containerId, what: `DEL never served in ${c.dels.length} tries` });
  const label = 'no call lost (each answered; SIGSTOP, SIGKILL excuse); errors only code 11 of a stopping announcer';
  return row(label, 'soak', calls.length, v);
}

/** A cycle's window of work: from its ADD to its DEL served (or last tried). */
function windowOf(c: Cycle): [number, number] {
  return [c.add!.start, delTime(c) ?? Number.POSITIVE_INFINITY];
}

/**
 * One cycle's frames beyond its plan: per address, rounds (+ the kernel's MAC-change GARP), and no gateway ask from
 * a pod that announces nothing.
 */
function beyondPlan(c: Cycle, fs: readonly BuiltFrame[]): Violation[] {
  const [from, until] = windowOf(c);
  const mac = c.resultMac ?? (c.profile.ipDerived ? c.derivedMac! : c.originalMac!);
  const planned = plannedRounds(c.profile);
  // A deferred pod's port is held when its MAC changes: the bridge drops that kernel GARP.
  const kernelGarp = c.profile.ipDerived && !c.profile.deferred;
  const v: Violation[] = [];
  for (const [ip, kind, kernel] of addressesOf(c, kernelGarp)) {
    const n = framesOf(fs, kind, ip, mac, from, until).length;
    if (n > planned + kernel) {
      const what = `${n} ${kind} for ${ip} from ${mac} between ADD and DEL; ${planned} rounds planned`;
      v.push({ at: from, pod: c.containerId, what: `${what}${kernel ? ' (+1 kernel GARP)' : ''}` });
    }
  }
  const asks = fs.filter((f) => f.kind.startsWith('gateway') && f.t >= from && f.t <= until);
  if (!announces(c.profile) && asks.length > 0)
    v.push({
      at: asks[0]!.t,
      pod: c.containerId,
      what: `${asks.length} gateway asks from a pod that announces nothing`,
    });
  return v;
}

/** The cycles whose work no SIGKILL interrupted: a killed announcer may repeat what it had sent (exempt). */
function notKilled(input: OracleInput, e: Excuses): Cycle[] {
  return input.cycles.filter(
    (c) => c.add !== undefined && c.originalMac !== undefined && !killedDuring(...windowOf(c), e),
  );
}

/** The soak's own: no pod sends more rounds than planned between ADD and DEL. */
function plannedRow(input: OracleInput, e: Excuses): Row {
  const checked = notKilled(input, e);
  const v = checked.flatMap((c) => beyondPlan(c, input.framesOf.get(c) ?? []));
  return row(
    'no pod sends more rounds than planned (a SIGKILL between ADD and DEL exempts)',
    'soak',
    checked.length,
    v,
  );
}

/**
 * A note: the gateway check asks once per address (the gateway netns always answers at once). It asks again after
 * the next round when it saw no answer; a SIGSTOP, which may close the window before the answer is read, exempts.
 */
function asksRow(input: OracleInput, e: Excuses): Row {
  const checked = notKilled(input, e).filter(
    (c) => !e.stops.some((s) => s.to >= windowOf(c)[0] && s.from <= windowOf(c)[1]),
  );
  const v = checked.flatMap((c) => {
    const [from, until] = windowOf(c);
    return (['gateway arp', 'gateway ns'] as const).flatMap((kind) => {
      const mine = (input.framesOf.get(c) ?? []).filter((f) => f.kind === kind && f.t >= from && f.t <= until);
      if (mine.length <= 1) return [];
      const when = mine.map((f) => `frame ${f.number} at +${((f.t - from) / 1000).toFixed(3)} s`).join(', ');
      const what = `${kind} asked ${mine.length} times after ADD (${when})${stopsWithin(from, until, input)}`;
      return [{ at: mine[1]!.t, pod: c.containerId, what }];
    });
  });
  return row('the gateway check asks once per address (SIGKILL, SIGSTOP exempt)', 'note', checked.length, v);
}

/** The soak's own: every stop the soak asked for with SIGTERM ended within the DaemonSet's grace period. */
function stopsRow(input: OracleInput): Row {
  const stops = input.faults.filter((f) => f.stopMs !== undefined);
  const v = stops
    .filter((f) => f.killedAt !== undefined || f.stopMs! > input.graceMs)
    .map((f) => ({ at: f.at, what: `${f.kind}: ${f.detail}` }));
  return row(`every SIGTERMed announcer exits within the grace period (${input.graceMs} ms)`, 'soak', stops.length, v);
}

/** Longest a stop may take: the bounded stop's STOP_MS (2 s), and a loaded node's late turn. */
export const STOP_BOUND_MS = 2500;

/** The soak's own: every stop of the announcer its log measured ended within STOP_BOUND_MS. */
function boundedStopsRow(input: OracleInput): Row {
  const measured = input.stops.filter((s) => s.stopMs !== undefined);
  const v = measured
    .filter((s) => s.stopMs! > STOP_BOUND_MS)
    .map((s) => ({ at: s.at, what: `pid ${s.pid} (${s.why}) took ${s.stopMs} ms to stop, as its log says` }));
  return row(`every stop of the announcer takes at most 2 s (+0.5 s), as its log says`, 'soak', measured.length, v);
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
    boundedStopsRow(input),
    asksRow(input, e),
  ];
}
