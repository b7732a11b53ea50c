import { describe, expect, it } from 'vitest';
import {
  folderOf,
  renderScores,
  scoresByFolder,
  type MutantStatus,
  type MutationReport,
} from '../../../scripts/mutation/scores';

function file(...statuses: MutantStatus[]): { mutants: { status: MutantStatus }[] } {
  return { mutants: statuses.map((status) => ({ status })) };
}

describe('folderOf', () => {
  it('groups a file by its folder, however deep', () => {
    expect(folderOf('src/announce/round.ts')).toBe('src/announce');
    expect(folderOf('src/a/b/c.ts')).toBe('src/a/b');
  });

  it('keeps a file directly under the top folder on its own', () => {
    expect(folderOf('src/plan.ts')).toBe('src/plan.ts');
    expect(folderOf('plan.ts')).toBe('plan.ts');
  });

  it('reads Windows separators as slashes', () => {
    expect(folderOf('src\\wire\\arp.ts')).toBe('src/wire');
  });
});

describe('scoresByFolder', () => {
  const report: MutationReport = {
    files: {
      'src/wire/arp.ts': file('Killed', 'Killed', 'Survived', 'Timeout'),
      'src/plan.ts': file('Killed', 'NoCoverage'),
      'src/wire/ndp.ts': file('Killed', 'CompileError', 'RuntimeError', 'Ignored', 'Pending', 'Survived'),
      'src/announce/round.ts': file('Ignored'),
    },
  };

  it('sums each folder, sorted by name, and a total; detected over valid as the score', () => {
    expect(scoresByFolder(report)).toEqual([
      {
        folder: 'src/announce',
        files: 1,
        killed: 0,
        timeout: 0,
        survived: 0,
        noCoverage: 0,
        excluded: 1,
        score: Number.NaN,
      },
      { folder: 'src/plan.ts', files: 1, killed: 1, timeout: 0, survived: 0, noCoverage: 1, excluded: 0, score: 50 },
      {
        folder: 'src/wire',
        files: 2,
        killed: 3,
        timeout: 1,
        survived: 2,
        noCoverage: 0,
        excluded: 4,
        score: (100 * 4) / 6,
      },
      {
        folder: 'total',
        files: 4,
        killed: 4,
        timeout: 1,
        survived: 2,
        noCoverage: 1,
        excluded: 5,
        score: (100 * 5) / 8,
      },
    ]);
  });

  it('gives only the total, with no score, for an empty report', () => {
    expect(scoresByFolder({ files: {} })).toEqual([
      { folder: 'total', files: 0, killed: 0, timeout: 0, survived: 0, noCoverage: 0, excluded: 0, score: Number.NaN },
    ]);
  });

  it('sorts folders by code unit, not by locale', () => {
    const rows = scoresByFolder({
      files: { 'src/b/x.ts': file('Killed'), 'src/B/x.ts': file('Killed'), 'src/a/x.ts': file('Killed') },
    });
    expect(rows.map((r) => r.folder)).toEqual(['src/B', 'src/a', 'src/b', 'total']);
  });
});

describe('renderScores', () => {
  it('right-aligns the counts under a header, the score with one decimal, n/a without valid mutants', () => {
    const rows = scoresByFolder({
      files: {
        'src/wire/arp.ts': file('Killed', 'Killed', 'Survived', 'Timeout', 'NoCoverage', 'NoCoverage'),
        'src/plan.ts': file('Ignored'),
      },
    });
    expect(renderScores(rows)).toEqual([
      'folder       files  mutants  killed  timeout  survived  no cov   score',
      'src/plan.ts      1        0       0        0         0       0     n/a',
      'src/wire         1        6       2        1         1       2  50.0 %',
      'total            2        6       2        1         1       2  50.0 %',
    ]);
  });
});
