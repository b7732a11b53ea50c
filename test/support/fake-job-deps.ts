// The announcer's table of work (src/daemon/jobs.ts) on fakes, as the gateway check's unit
// tests drive it: one pod's sockets, a stateDir's records, manual timers.
import type { JobDeps } from '../../src/daemon/jobs';
import { identityViews } from './caller-view-fakes';
import { type FakePod, keptLog, ScriptedBudget, type StateDir } from './daemon-fakes';
import { fakeLibc } from './fake-libc';
import type { ManualTimers } from './manual-timers';
import { RecordMemory } from '../../src/announce/record-memory';

/**
 * JobDeps for `pod` and `state` on `timers`: every fd polled is ready, closes and locks do nothing, the budget always
 * grants; `over` replaces any of them.
 */
export function fakeJobDeps(state: StateDir, pod: FakePod, timers: ManualTimers, over: Partial<JobDeps> = {}): JobDeps {
  return {
    stateDir: state.dir,
    libc: fakeLibc({ pollIn: (fds) => fds.map(() => true) }),
    open: pod.opener(),
    views: identityViews,
    closeInBackground: () => undefined,
    timers,
    budget: new ScriptedBudget().budget,
    lockFile: async (path) => ({ path, release: () => undefined }),
    written: new RecordMemory(),
    jobLog: () => keptLog().log,
    observeGatewayAnswer: () => undefined,
    ...over,
  };
}
