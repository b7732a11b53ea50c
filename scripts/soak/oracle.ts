// The oracle: what tshark saw on the bridge and what each CNI call returned, held against the invariants the product
// promises
// (part 4), plus three of the soak's own. Pure: records in, rows of verdicts out, each violation naming the pod, the
// call, what was seen and when.
//
// Kernel frames that look like the announcer's (the rule, by MAC and time). The bridge plugin sets arp_notify=1 on
// eth0, so the pod's kernel sends one GARP each time eth0's MAC changes:
// - when ADD sets an IP-derived MAC, from the derived MAC, just before round 1 (a ready pod's port forwards, so it is
//   on the wire: a derived ADD that returned has two GARPs per IPv4 address before it returned, the kernel's and
//   round 1's; a deferred pod's port is held then, and the bridge drops it);
// - when DEL (or a failed ADD's undo) restores the original MAC, from the original MAC, while the command runs, so
//   before the DEL is served: the capture may stamp it up to RESTORE_SLACK_MS after the DEL process exited.
// After a DEL was served, the announcer would still send from the MAC it announced with (the derived one), or from the
// pod's own MAC once restored (rounds re-read it): every such frame counts, but the original MAC's GARP within the
// slack, which is the restore's.
import { canonicalIp } from '../../test/integration/harness/neigh';
import { deadlineOf, outcomeLine, unanswered, waitedOutDeadline } from './calls';
import type { BuiltFrame } from './frames';
import type { CallRecord, Cycle, FaultRecord, Span } from './model';
import { announces } from './profile';

/** How long after a DEL was served a GARP from the restored original MAC is still the kernel's (see above). */
export const RESTORE_SLACK_MS = 250;
/** A call that started up to this long after a SIGKILL may have met the killed announcer's closing socket. */
export const KILL_REACH_MS = 1000;

/** One break of an invariant. */
export interface Violation {
  at: number;
  pod?: string;
  what: string;
}

/** One invariant: how many things it was checked on, and what broke it. */
export interface Row {
  label: string;
  /**
   * `issue`: one of the invariants the product promises (no call lost when the announcer stops); `soak`: one of the
   * soak's own, which fails the run too; `note`: something
   * worth knowing that no promise of the product rules out, reported without failing the run.
   */
  from: 'issue' | 'soak' | 'note';
  checked: number;
  violations: Violation[];
}

/** What the end of the run left. */
export interface EndState {
  /** When the end was looked at. */
  at: number;
  /** Entries of stateDir other than announcer.conf and the lock file. */
  left: string[];
  /** Announcer processes of the run still there after their idle exit was due. */
  announcers: string[];
  /** Pods' netns markers still there at the end. */
  markers: string[];
}

/** Everything the oracle reads. */
export interface OracleInput {
  startedAt: number;
  cycles: readonly Cycle[];
  faults: readonly FaultRecord[];
  framesOf: ReadonlyMap<Cycle, readonly BuiltFrame[]>;
  /** Every stop of an announcer, for the context of a violation. */
  stops: readonly AnnouncerStop[];
  end: EndState;
  graceMs: number;
}

/** An announcer that stopped (its log's last line, or the soak's SIGKILL), and why. */
export interface AnnouncerStop {
  at: number;
  pid: number;
  why: string;
  /** How long the stop took, as the announcer's last log line says (the bounded stop's releases). */
  stopMs?: number;
}

/** The announcer stops while a call ran (and up to 1 s before it), as evidence next to a violation. */
export function stopsDuring(r: CallRecord, input: OracleInput): string {
  return stopsWithin(r.start - KILL_REACH_MS, r.end, input);
}

/** The announcer stops within [from, to], as evidence next to a violation. */
export function stopsWithin(from: number, to: number, input: OracleInput): string {
  const seen = input.stops.filter((s) => s.at >= from && s.at <= to);
  if (seen.length === 0) return '';
  const at = (t: number): string => `+${((t - input.startedAt) / 1000).toFixed(3)} s`;
  return `; meanwhile ${seen.map((s) => `pid ${s.pid} stopped (${s.why}) at ${at(s.at)}`).join(', ')}`;
}

/** The faults that excuse a failed call: the stops' spans, the kills' times. */
export interface Excuses {
  stops: Span[];
  kills: number[];
}

export function excusesOf(faults: readonly FaultRecord[]): Excuses {
  return {
    stops: faults.filter((f) => f.kind === 'SIGSTOP' && f.counted).map((f) => ({ from: f.at, to: f.end })),
    kills: faults.flatMap((f) => (f.killedAt === undefined ? [] : [f.killedAt])),
  };
}

export const overlapsStop = (r: CallRecord, e: Excuses): boolean =>
  e.stops.some((s) => r.start <= s.to && r.end >= s.from);
export const killedDuring = (from: number, to: number, e: Excuses): boolean =>
  e.kills.some((k) => k >= from && k <= to);

export function callsOf(c: Cycle): CallRecord[] {
  return [...(c.add ? [c.add] : []), ...c.checks, ...c.dels];
}

/** A call, for a violation's text. */
export function callText(r: CallRecord): string {
  return `${r.command}${r.command === 'DEL' ? ` try ${r.attempt}` : ''} (${r.end - r.start} ms): ${outcomeLine(r)}`;
}

export function row(label: string, from: Row['from'], checked: number, violations: Violation[]): Row {
  return { label, from, checked, violations };
}

/**
 * Whether the call waited out its deadline: the shim says so ("no answer within N ms"), or it got no answer of the
 * announcer's (refused at every try, a reset, an EOF) and took its whole deadline (100 ms less for the timers' slack).
 */
function waitedOut(r: CallRecord, c: Cycle): boolean {
  return waitedOutDeadline(r) || (unanswered(r) && r.end - r.start >= deadlineOf(r, c.profile.addWaitMs) - 100);
}

/** 1. No call waits out its deadline while an announcer is running and not stopped. */
export function deadlineRow(input: OracleInput, e: Excuses): Row {
  const calls = input.cycles.flatMap((c) => callsOf(c).map((r) => [r, c] as const));
  const violations = calls
    .filter(([r, c]) => waitedOut(r, c) && !overlapsStop(r, e))
    .map(([r]) => r)
    .map((r) => ({
      at: r.start,
      pod: r.pod,
      what: `waited out its deadline, no SIGSTOP meanwhile: ${callText(r)}${stopsDuring(r, input)}`,
    }));
  return row('no call waits out its deadline while an announcer runs, not stopped', 'issue', calls.length, violations);
}

/** The frames of `kind` about `ip` from `mac` within [from, to]. */
export function framesOf(fs: readonly BuiltFrame[], kind: string, ip: string, mac: string, from: number, to: number) {
  const want = canonicalIp(ip);
  return fs.filter((f) => f.kind === kind && f.mac === mac && canonicalIp(f.ip) === want && f.t >= from && f.t <= to);
}

/** The addresses a cycle announces: [address, frame kind, kernel GARPs of a MAC change that come with round 1]. */
export function addressesOf(c: Cycle, macChanged: boolean): [string, string, number][] {
  return [[c.ip4, 'garp', macChanged ? 1 : 0], ...(c.ip6 ? [[c.ip6, 'na', 0] as [string, string, number]] : [])];
}

/** 2. For one ready pod that announces, ADD exited 0: its round 1 went out before ADD returned, once. */
function roundOneOf(c: Cycle, fs: readonly BuiltFrame[]): Violation[] {
  const add = c.add!;
  const mac = c.resultMac ?? c.originalMac!;
  const out: Violation[] = [];
  for (const [ip, kind, kernel] of addressesOf(c, c.profile.ipDerived && mac !== c.originalMac)) {
    const seen = framesOf(fs, kind, ip, mac, add.start, add.end);
    const need = 1 + kernel;
    const expect = kernel ? "the kernel's arp_notify GARP of the MAC change, and round 1" : 'round 1';
    if (seen.length < need) {
      const what = `round 1 not on the wire before ADD returned: ${seen.length} ${kind} for ${ip} from ${mac}`;
      out.push({ at: add.start, pod: c.containerId, what: `${what}, ${need} expected (${expect}); ${callText(add)}` });
      continue;
    }
    // Later rounds may fall before the ADD process is seen gone; they come intervalMs after round 1, never sooner.
    for (let i = need, last = seen[need - 1]!; i < seen.length; last = seen[i++]!) {
      if (seen[i]!.t - last.t >= c.profile.intervalMs / 2) continue;
      const what = `round 1 twice: ${kind} for ${ip} at ${(seen[i]!.t - last.t).toFixed(1)} ms after the one before`;
      out.push({ at: seen[i]!.t, pod: c.containerId, what: `${what} (frame ${seen[i]!.number}); ${callText(add)}` });
    }
  }
  return out;
}

export function roundOneRow(input: OracleInput): Row {
  const checked = input.cycles.filter(
    (c) => c.add?.code === 0 && announces(c.profile) && !c.profile.deferred && c.originalMac !== undefined,
  );
  const violations = checked.flatMap((c) => roundOneOf(c, input.framesOf.get(c) ?? []));
  return row(
    'a ready pod that announces: round 1 on the wire before ADD exits 0, once',
    'issue',
    checked.length,
    violations,
  );
}

/** When the pod's DEL was served (else its last try): nothing of the pod may go out after. */
export function delTime(c: Cycle): number | undefined {
  return c.delServedAt ?? c.dels.at(-1)?.end;
}

/** The frames of a cycle after its DEL was served, but the restore's own kernel GARP (see the rule above). */
export function afterDel(c: Cycle, fs: readonly BuiltFrame[]): Violation[] {
  const ds = delTime(c);
  if (ds === undefined) return [];
  const restore = (f: BuiltFrame): boolean =>
    c.profile.ipDerived && f.kind === 'garp' && f.mac === c.originalMac && f.t <= ds + RESTORE_SLACK_MS;
  const served = c.delServedAt === undefined ? 'its last DEL (never served)' : 'its DEL was served';
  return fs
    .filter((f) => f.t > ds && !restore(f))
    .map((f) => ({
      at: f.t,
      pod: c.containerId,
      what:
        `${f.kind}${f.op ? ` op ${f.op}` : ''} for ${f.ip} from ${f.mac} (frame ${f.number}) ` +
        `${(f.t - ds).toFixed(0)} ms after ${served}; ADD ${c.add ? outcomeLine(c.add) : 'not run'}`,
    }));
}

/** 3. Nothing of a failed ADD goes out after the runtime's DEL for it was served. */
export function failedAddRow(input: OracleInput): Row {
  const failed = input.cycles.filter((c) => c.add !== undefined && c.add.code !== 0);
  const violations = failed.flatMap((c) => afterDel(c, input.framesOf.get(c) ?? []));
  return row("nothing of a failed ADD after the runtime's DEL for it was served", 'issue', failed.length, violations);
}

/** 4. Nothing the announcer builds leaves a pod after that pod's DEL was served. */
export function afterDelRow(input: OracleInput): Row {
  const deleted = input.cycles.filter((c) => c.add !== undefined && c.dels.length > 0);
  const violations = deleted.flatMap((c) => afterDel(c, input.framesOf.get(c) ?? []));
  return row('nothing the announcer builds leaves a pod after its DEL was served', 'issue', deleted.length, violations);
}
