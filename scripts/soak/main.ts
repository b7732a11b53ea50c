// make soak: the fault soak (scripts/soak/soak.ts) for SOAK_S seconds (default 90), seeded by SOAK_SEED (default: a
// random seed, printed: SOAK_SEED=N repeats the run's choices). Prints the faults, the load and the invariants as
// tables; exits 1 when an invariant failed or a fault kind fell short of its minimum. Root only; everything it makes
// goes on exit, failure or Ctrl-C.
//
//   SOAK_S=N        seconds of load and chaos (more if the minimum of each fault is not met by then)
//   SOAK_SEED=N     the seed
//   SOAK_WORKERS=N  pods churning at once (default 6)
//   SOAK_DUMP=FILE  also write every call, pod, frame and fault as JSON to FILE, the announcer log to FILE.log
import { randomInt } from 'node:crypto';
import { copyFileSync, writeFileSync } from 'node:fs';
import { ANNOUNCER, BRIDGE_PLUGIN } from '../../test/integration/harness/cni';
import { requireExecutables, requireRoot } from '../shared/preflight';
import { scopedMain } from '../shared/scoped-main';
import { passed, renderReport } from './report';
import { runSoak } from './soak';

/** A positive integer from the environment, or the default. */
function envInt(name: string, dflt: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return n;
}

await scopedMain('make soak', async (scope, abort) => {
  const seconds = envInt('SOAK_S', 90);
  const seed = envInt('SOAK_SEED', randomInt(1, 2 ** 31 - 1));
  const workers = envInt('SOAK_WORKERS', 6);
  console.log(`soak: seed ${seed} (SOAK_SEED=${seed} SOAK_S=${seconds} make soak repeats it)`);
  requireRoot('make soak', 'it creates bridges, netns and pods, and signals the announcers it started');
  requireExecutables([
    [ANNOUNCER, 'run `make build`'],
    [BRIDGE_PLUGIN, 'run `make system-deps`'],
    ['/usr/bin/tshark', 'run `make system-deps`'],
    ['/usr/bin/tcpdump', 'run `make system-deps`'],
  ]);
  const report = await runSoak(scope, { seconds, seed, workers, signal: abort, say: (l) => console.log(l) });
  const dump = process.env.SOAK_DUMP;
  if (dump) {
    const frames = Object.fromEntries([...report.framesOf].map(([c, fs]) => [c.containerId, fs]));
    writeFileSync(dump, JSON.stringify({ ...report, framesOf: frames }));
    copyFileSync(report.logFile, `${dump}.log`);
  }
  console.log(`\n${renderReport(report)}`);
  return passed(report) ? 0 : 1;
});
