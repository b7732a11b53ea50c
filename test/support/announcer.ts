// The announcer's parts (src/daemon/daemon.ts's Announcer) for unit tests of its table, rounds, gateway check and
// hosted commands: the real table, waits, locks, record memory and counters, on fakes only at the edges (a pod behind
// an injected socket opener, libc, the callers' views, a manual clock, a scripted budget). Its own log and every job's
// are kept as records (log-records.ts).
import type { FrameBudget, NodeBudget, RateLimit } from '../../src/announce/budget';
import { RecordMemory } from '../../src/announce/record-memory';
import { resolveNodeSettings } from '../../src/cni/node-settings';
import { type Announcer, LoopWaits } from '../../src/daemon/daemon';
import { MemoryLocks } from '../../src/daemon/host';
import { LazyMetrics, newCounters } from '../../src/daemon/metrics';
import { Jobs } from '../../src/daemon/table';
import { createLogger } from '../../src/log';
import type { CallerViews } from '../../src/sys/caller-view';
import { identityView } from './caller-view-fakes';
import type { FakePod, StateDir } from './daemon-fakes';
import { fakeLibc } from './fake-libc';
import { logRecords, type LogRecord } from './log-records';
import type { ManualTimers } from './manual-timers';

/** One take of the scripted budget. */
export interface BudgetCall {
  rounds: 'first' | 'later';
  frames: number;
  onCredit: boolean;
  /** The boot ms the take was made at. */
  at: number;
}

/** A node budget that answers from `answers` (then ok): a number is a wait in ms, an Error is thrown. */
export class ScriptedBudget implements NodeBudget {
  readonly calls: BudgetCall[] = [];
  readonly answers: (number | 'ok' | Error)[] = [];
  readonly first = this.side('first');
  readonly later = this.side('later');

  private side(rounds: 'first' | 'later'): FrameBudget {
    return {
      take: (frames, at, onCredit = false) => {
        this.calls.push({ rounds, frames, onCredit, at });
        const answer = this.answers.shift() ?? 'ok';
        if (answer instanceof Error) throw answer;
        return typeof answer === 'number' ? { ok: false, waitMs: answer } : { ok: true };
      },
    };
  }
}

/** Views that resume every recorded job, and every caller, in the test process's own view. */
export const identityCallerViews = {
  mine: identityView,
  ofPeer: () => identityView,
  forRecorded: () => identityView,
} as unknown as CallerViews;

/** The parts, and what the test reads back: the log records (the announcer's and the jobs'), the budget's takes. */
export interface TestAnnouncer extends Announcer {
  budget: ScriptedBudget;
  /** Every log line so far, as records. */
  records(): LogRecord[];
}

/**
 * An announcer of `state` whose pods are `pod`, on `timers`: every fd polled is ready, closes do nothing, the budget
 * grants unless scripted; `over` replaces any part (the table is made last, from the parts).
 */
export function testAnnouncer(
  state: StateDir,
  pod: FakePod,
  timers: ManualTimers,
  over: Partial<Announcer> & { rateLimit?: RateLimit } = {},
): TestAnnouncer {
  const lines: string[] = [];
  const log = createLogger((line) => lines.push(line), 'debug');
  const counters = newCounters();
  const waits = new LoopWaits(() => timers.now());
  const budget = new ScriptedBudget();
  const a = {
    stateDir: state.dir,
    libc: fakeLibc({ pollIn: (fds: readonly number[]) => fds.map(() => true) }),
    open: pod.opener(),
    views: identityCallerViews,
    timers,
    waits,
    attachmentLocks: new MemoryLocks((ms, signal) => waits.sleep(ms, signal)),
    written: new RecordMemory(),
    frameBudget: budget,
    closeInBackground: () => undefined,
    counters,
    metrics: new LazyMetrics(() => counters),
    settings: resolveNodeSettings(over.rateLimit ? { rateLimit: over.rateLimit } : {}),
    log,
    jobLog: () => log,
    failed: (what: string, error: unknown, fields: Record<string, unknown> = {}) => {
      counters.errors++;
      log.error(what, { ...fields, error });
    },
    ...over,
    budget,
    records: () => logRecords(lines.join('\n')),
  } as TestAnnouncer;
  a.jobs = over.jobs ?? new Jobs(a);
  return a;
}

import { CallerViews as CallerViewsClass } from '../../src/sys/caller-view';

/** Callers' views made of `parts` (own properties over CallerViews' prototype: its private state is never read). */
export function viewsOf(parts: Pick<CallerViews, 'mine' | 'ofPeer' | 'forRecorded'>): CallerViews {
  const { mine, ofPeer, forRecorded } = parts;
  return Object.create(CallerViewsClass.prototype, {
    mine: { value: mine },
    ofPeer: { value: ofPeer },
    forRecorded: { value: forRecorded },
  });
}
