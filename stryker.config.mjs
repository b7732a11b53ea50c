// StrykerJS over the unit tests (`make mutation`). MUTATE='glob,glob' narrows the files mutated.
// The whole tree, so that a module moved or merged cannot drop out. The Bun transports (*.bun.ts) are left out:
// the unit tests run on Node, against their Node twins; the integration tests run the Bun ones.
const DEFAULT_MUTATE = ['src/**/*.ts', '!src/**/*.bun.ts'];

const mutate = process.env.MUTATE ? process.env.MUTATE.split(',').map((glob) => glob.trim()) : DEFAULT_MUTATE;
// INCREMENTAL=1 reuses the results of the last run of the same file set (one file per set, so a
// one-folder run does not drop the others'). Off by default: StrykerJS 9.6 reuses a static mutant's
// result (a module-level constant, a schema) even when new tests would now kill it.
const slug = process.env.MUTATE
  ? mutate
      .join('+')
      .replace(/[^A-Za-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
  : 'all';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  plugins: ['@stryker-mutator/vitest-runner'],
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.unit.config.ts' },
  mutate,
  coverageAnalysis: 'perTest',
  concurrency: 2,
  incremental: process.env.INCREMENTAL === '1',
  incrementalFile: `reports/stryker-incremental-${slug}.json`,
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  ignorePatterns: ['bin', 'dist', 'coverage', '.test-results', 'reports'],
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
};
