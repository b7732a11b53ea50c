// Mutation scores per folder, summed from StrykerJS's JSON report (pure).

/** A mutant's status as the mutation-testing-report schema spells it. */
export type MutantStatus =
  | 'Killed'
  | 'Survived'
  | 'NoCoverage'
  | 'Timeout'
  | 'CompileError'
  | 'RuntimeError'
  | 'Ignored'
  | 'Pending';

/** The part of Stryker's JSON report (mutation-testing-report-schema) this sums. */
export interface MutationReport {
  files: Record<string, { mutants: ReadonlyArray<{ status: MutantStatus }> }>;
}

/** The counts of one folder (or of all, as the total). */
export interface FolderScore {
  folder: string;
  files: number;
  killed: number;
  timeout: number;
  survived: number;
  noCoverage: number;
  /** Ignored, compile and runtime errors, pending: not counted in the score, as Stryker does. */
  excluded: number;
  /** Detected (killed + timeout) over valid (detected + survived + no coverage), in percent; NaN when none is valid. */
  score: number;
}

/** A file's group: its folder, but a file directly under the top folder (src/plan.ts) stands alone. */
export function folderOf(path: string): string {
  const parts = path.replace(/\\/g, '/').split('/');
  return parts.length <= 2 ? parts.join('/') : parts.slice(0, -1).join('/');
}

function emptyScore(folder: string): FolderScore {
  return { folder, files: 0, killed: 0, timeout: 0, survived: 0, noCoverage: 0, excluded: 0, score: Number.NaN };
}

function withScore(s: FolderScore): FolderScore {
  const detected = s.killed + s.timeout;
  // No valid mutant: 0 / 0, NaN.
  return { ...s, score: (100 * detected) / (detected + s.survived + s.noCoverage) };
}

function count(s: FolderScore, status: MutantStatus): void {
  if (status === 'Killed') s.killed += 1;
  else if (status === 'Timeout') s.timeout += 1;
  else if (status === 'Survived') s.survived += 1;
  else if (status === 'NoCoverage') s.noCoverage += 1;
  else s.excluded += 1;
}

/** One row per folder, sorted by name, then a row `total` over every file. */
export function scoresByFolder(report: MutationReport): FolderScore[] {
  const folders = new Map<string, FolderScore>();
  const total = emptyScore('total');
  for (const [path, file] of Object.entries(report.files)) {
    const key = folderOf(path);
    const row = folders.get(key) ?? emptyScore(key);
    folders.set(key, row);
    row.files += 1;
    total.files += 1;
    for (const mutant of file.mutants) {
      count(row, mutant.status);
      count(total, mutant.status);
    }
  }
  const rows = [...folders.values()].sort((a, b) => (a.folder < b.folder ? -1 : 1)); // folders are distinct
  return [...rows, total].map(withScore);
}

const COLUMNS = ['folder', 'files', 'mutants', 'killed', 'timeout', 'survived', 'no cov', 'score'] as const;

/** The rows as a plain text table, score with one decimal (`n/a` when no mutant is valid). */
export function renderScores(rows: readonly FolderScore[]): string[] {
  const cells = rows.map((r) => [
    r.folder,
    String(r.files),
    String(r.killed + r.timeout + r.survived + r.noCoverage),
    String(r.killed),
    String(r.timeout),
    String(r.survived),
    String(r.noCoverage),
    Number.isNaN(r.score) ? 'n/a' : `${r.score.toFixed(1)} %`,
  ]);
  const table = [[...COLUMNS], ...cells];
  const widths = COLUMNS.map((_, i) => Math.max(...table.map((row) => row[i].length)));
  return table.map((row) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  '),
  );
}
