// The soak's report: the faults it caused (with the minimum of each kind), the load it ran, and the invariants as a
// table, then each violation with its pod, call and time. Pure: a finished run in, text out.
import { markdownTable } from '../bench/report';
import { delServed } from './calls';
import type { BuiltFrame } from './frames';
import { FAULT_KINDS, type Cycle, type FaultKind, type FaultRecord } from './model';
import type { AnnouncerStop, Row } from './oracle';

/** A finished run. */
export interface SoakReport {
  seed: number;
  seconds: number;
  workers: number;
  minimum: number;
  idleExitMs: number;
  builds: readonly string[];
  startedAt: number;
  endedAt: number;
  faults: readonly FaultRecord[];
  cycles: readonly Cycle[];
  rows: readonly Row[];
  frames: number;
  /** Each pod's frames the announcer could have built. */
  framesOf: ReadonlyMap<Cycle, readonly BuiltFrame[]>;
  unplaced: readonly BuiltFrame[];
  /** Every announcer stop of the run, and the node's announcer log (removed with the run's files at its end). */
  stops: readonly AnnouncerStop[];
  logFile: string;
  /** What went wrong with the run itself (the capture incomplete…): the run then fails. */
  problems: readonly string[];
}

/** Violations shown per row; the rest are counted. */
const SHOWN = 12;

/** How many faults of each kind happened as intended, and were tried. */
export function faultCounts(r: SoakReport): Map<FaultKind, { counted: number; tried: number }> {
  const counts = new Map(FAULT_KINDS.map((k) => [k, { counted: 0, tried: 0 }]));
  for (const f of r.faults) {
    const c = counts.get(f.kind)!;
    c.tried++;
    if (f.counted) c.counted++;
  }
  return counts;
}

/** Whether the run passed: every row held, every fault kind reached its minimum, the run itself went right. */
export function passed(r: SoakReport): boolean {
  const faultsMet = [...faultCounts(r).values()].every((c) => c.counted >= r.minimum);
  const held = r.rows.every((row) => row.from === 'note' || row.violations.length === 0);
  return faultsMet && r.problems.length === 0 && held;
}

function faultTable(r: SoakReport): string {
  const body = [...faultCounts(r)].map(([kind, c]) => {
    const mine = r.faults.filter((f) => f.kind === kind && f.counted);
    const stops = mine.flatMap((f) => (f.stopMs === undefined ? [] : [f.stopMs]));
    const spans = kind === 'SIGSTOP' ? mine.map((f) => f.end - f.at) : [];
    const notes = [
      stops.length > 0 ? `exit after SIGTERM ${Math.min(...stops)}–${Math.max(...stops)} ms` : '',
      spans.length > 0 ? `stopped ${Math.min(...spans)}–${Math.max(...spans)} ms` : '',
      c.tried > c.counted ? `${c.tried - c.counted} not as intended` : '',
    ].filter((s) => s !== '');
    const verdict = c.counted >= r.minimum ? 'ok' : 'MISSING';
    return [kind, String(r.minimum), String(c.counted), verdict, notes.join('; ')];
  });
  return markdownTable(['fault', 'minimum', 'count', '', 'notes'], body, [false, true, true, false, false]);
}

function loadLines(r: SoakReport): string[] {
  const cycles = r.cycles.filter((c) => c.add !== undefined);
  const calls = cycles.flatMap((c) => [c.add!, ...c.checks, ...c.dels]);
  const by = (cmd: string, ok: (x: (typeof calls)[number]) => boolean): string => {
    const mine = calls.filter((x) => x.command === cmd);
    return `${cmd} ${mine.length} (${mine.filter(ok).length} ${cmd === 'DEL' ? 'served' : 'exit 0'})`;
  };
  const kinds = [
    `${cycles.filter((c) => c.profile.ipDerived).length} ip-derived`,
    `${cycles.filter((c) => c.profile.deferred).length} deferred`,
    `${cycles.filter((c) => c.profile.ipv6).length} dual-stack`,
    `${cycles.filter((c) => c.profile.routed).length} routed via the gateway`,
    `${cycles.filter((c) => c.profile.announce !== 'yes').length} count 0 or opted out`,
  ];
  const notOk = calls.filter((x) => (x.command === 'DEL' ? !delServed(x) : x.code !== 0)).length;
  return [
    `load: ${cycles.length} pods on ${r.workers} workers (${kinds.join(', ')})`,
    `calls that failed or left a DEL unserved: ${notOk} (row 6 says which a SIGSTOP or SIGKILL does not excuse)`,
    `calls: ${by('ADD', (x) => x.code === 0)}, ${by('CHECK', (x) => x.code === 0)}, ${by('DEL', delServed)}`,
    `capture: ${r.frames} frames on the bridge; ${r.unplaced.length} built-looking frames of no pod's cycle`,
  ];
}

function rowTable(r: SoakReport): string {
  const body = r.rows.map((row, i) => [
    String(i + 1),
    row.label,
    row.from,
    String(row.checked),
    String(row.violations.length),
    row.violations.length === 0 ? 'held' : row.from === 'note' ? 'seen' : 'FAILED',
  ]);
  return markdownTable(['#', 'invariant', 'from', 'checked', 'violations', ''], body, [
    true,
    false,
    false,
    true,
    true,
    false,
  ]);
}

function violationLines(r: SoakReport): string[] {
  const at = (t: number): string => `+${((t - r.startedAt) / 1000).toFixed(3)} s (${new Date(t).toISOString()})`;
  return r.rows.flatMap((row, i) => {
    if (row.violations.length === 0) return [];
    const shown = [...row.violations].sort((a, b) => a.at - b.at).slice(0, SHOWN);
    const more = row.violations.length - shown.length;
    return [
      `#${i + 1} ${row.label}:`,
      ...shown.map((v) => `  ${at(v.at)}${v.pod ? ` ${v.pod}` : ''}: ${v.what}`),
      ...(more > 0 ? [`  … and ${more} more`] : []),
    ];
  });
}

/** The whole report. */
export function renderReport(r: SoakReport): string {
  const secs = ((r.endedAt - r.startedAt) / 1000).toFixed(0);
  return [
    `soak: seed ${r.seed} (SOAK_SEED=${r.seed} repeats it), ${r.seconds} s asked, ${secs} s run, builds ` +
      `${r.builds.join(' and ')}, idleExitMs ${r.idleExitMs}`,
    '',
    faultTable(r),
    '',
    ...loadLines(r),
    '',
    rowTable(r),
    '',
    ...violationLines(r),
    ...r.problems.map((p) => `run problem: ${p}`),
    `soak: ${passed(r) ? 'PASS' : 'FAIL'} (seed ${r.seed})`,
  ].join('\n');
}
