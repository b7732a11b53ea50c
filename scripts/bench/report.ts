// The bench's one table (aligned Markdown, so it can go into docs/performance.md
// as it is) and its budget lines. Pure: figures in, text out.
import { median, quantile } from './stats';

/** One table row: its samples (ms) and, for a process, its peak RSS. */
export interface TableRow {
  name: string;
  samples: readonly number[];
  /** Peak RSS in KiB; absent for rows that are not a process of their own. */
  rssKiB?: number;
  /** A system call timed inside a process rather than a process run: no ratios. */
  syscall?: boolean;
}

/** A budget and whether it held. */
export interface Verdict {
  label: string;
  /** The measured figure, rendered with its unit (e.g. `0.74× node`). */
  measured: string;
  pass: boolean;
}

const fmtMs = (ms: number): string => (ms < 1 ? ms.toFixed(3) : ms.toFixed(1));
const fmtRatio = (r: number): string => r.toFixed(2);
const fmtMiB = (kib: number | undefined): string => (kib === undefined ? '—' : (kib / 1024).toFixed(1));

/** Pads every column to its widest cell and joins the cells as a Markdown table. */
export function markdownTable(
  header: readonly string[],
  body: readonly (readonly string[])[],
  rightAligned: readonly boolean[],
): string {
  const widths = header.map((h, c) => Math.max(h.length, ...body.map((r) => r[c]!.length)));
  const pad = (cell: string, c: number): string =>
    rightAligned[c] ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!);
  const line = (cells: readonly string[]): string => `| ${cells.map(pad).join(' | ')} |`;
  const dashes = (w: number, c: number): string => (rightAligned[c] ? `${'-'.repeat(w + 1)}:` : `${'-'.repeat(w + 2)}`);
  const rule = `|${widths.map(dashes).join('|')}|`;
  return [line(header), rule, ...body.map(line)].join('\n');
}

/**
 * The table: median wall time, the middle half of the samples (p25–p75, the
 * machine's noise), the median's ratio to the yardstick and to the peer rows,
 * and peak RSS.
 */
export function renderTable(
  rows: readonly TableRow[],
  yardstick: { name: string; label: string },
  peer: { name: string; label: string },
): string {
  const medianOf = (name: string): number => median(rows.find((r) => r.name === name)?.samples ?? []);
  const base = medianOf(yardstick.name);
  const peerMs = medianOf(peer.name);
  const body = rows.map((r) => {
    const m = median(r.samples);
    return [
      r.name,
      fmtMs(m),
      `${fmtMs(quantile(r.samples, 0.25))}–${fmtMs(quantile(r.samples, 0.75))}`,
      r.syscall ? '—' : `${fmtRatio(m / base)}×`,
      r.syscall ? '—' : `${fmtRatio(m / peerMs)}×`,
      fmtMiB(r.rssKiB),
    ];
  });
  const header = ['command', 'median ms', 'p25–p75 ms', `× ${yardstick.label}`, `× ${peer.label}`, 'peak RSS MiB'];
  return markdownTable(header, body, [false, true, true, true, true, true]);
}

/** One PASS/FAIL line per verdict. */
export function renderVerdicts(verdicts: readonly Verdict[]): string {
  const width = Math.max(...verdicts.map((v) => v.label.length));
  return verdicts.map((v) => `  ${v.pass ? 'PASS' : 'FAIL'}  ${v.label.padEnd(width)}  ${v.measured}`).join('\n');
}
