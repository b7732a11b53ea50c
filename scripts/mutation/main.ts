// make mutation, last step: the mutation score per folder from Stryker's JSON report.
//   npx vite-node scripts/mutation/main.ts [reports/mutation/mutation.json]
import { readFileSync } from 'node:fs';
import { renderScores, scoresByFolder, type MutationReport } from './scores';

const path = process.argv[2] ?? 'reports/mutation/mutation.json';
const report = JSON.parse(readFileSync(path, 'utf8')) as MutationReport;
console.log(`Mutation score per folder (${path}):`);
for (const line of renderScores(scoresByFolder(report))) console.log(`  ${line}`);
