// Prints vitest's JSON report as the list of skipped tests, file by file (why
// each was skipped is in the `SKIP <file>: …` lines above, printed by
// test/support/skip.ts), then one plain closing line: "N passed, N failed, N skipped".
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);

const lines = [];
for (const file of report.testResults ?? []) {
  const tests = (file.assertionResults ?? []).filter((t) => t.status !== 'passed' && t.status !== 'failed');
  if (tests.length === 0) continue;
  lines.push(`  ${relative(process.cwd(), file.name)} (${tests.length})`);
  for (const t of tests)
    lines.push(`    ${[...t.ancestorTitles, t.title].join(' > ')}${t.status === 'skipped' ? '' : ` [${t.status}]`}`);
}
if (lines.length > 0) console.log(['skipped tests, by file:', ...lines].join('\n'));
console.log(`${report.numPassedTests} passed, ${report.numFailedTests} failed, ${skipped} skipped`);
