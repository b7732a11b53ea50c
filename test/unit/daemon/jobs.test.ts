// The announcer's table of work, driven through fakes: jobs taken from the
// records and from ADD's requests, rounds at their offsets, late rounds
// skipped, cancel, deferred waits, and a throw on every path.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BackgroundJob } from '../../../src/announce/background-job';
import { newCounters, type Counters } from '../../../src/daemon/counters';
import { Jobs, type JobDeps } from '../../../src/daemon/jobs';
import { fakeLibc } from '../../support/fake-libc';
import {
  FakePod,
  jobIn,
  jobRecord,
  keptLog,
  link,
  makeStateDir,
  ScriptedBudget,
  writeJob,
  type StateDir,
} from '../../support/daemon-fakes';
import { ManualTimers } from '../../support/manual-timers';
import { identityViews } from '../../support/caller-view-fakes';
import { RecordMemory } from '../../../src/announce/record-memory';

let state: StateDir;
let pod: FakePod;
let budget: ScriptedBudget;
let timers: ManualTimers;
let closed: number[];
let counters: Counters;
let lines: string[];
let locked: string[];
let jobs: Jobs;

beforeEach(() => {
  state = makeStateDir();
  pod = new FakePod();
  budget = new ScriptedBudget();
  timers = new ManualTimers();
  closed = [];
  counters = newCounters();
  locked = [];
  const kept = keptLog();
  lines = kept.lines;
  const deps: JobDeps = {
    stateDir: state.dir,
    libc: fakeLibc({}),
    open: pod.opener(),
    views: identityViews,
    closeInBackground: (fd) => void closed.push(fd),
    timers,
    budget: budget.budget,
    lockFile: async (path) => (locked.push(path), { path, release: () => undefined }),
    written: new RecordMemory(),
    jobLog: () => kept.log,
    observeGatewayAnswer: () => undefined,
  };
  jobs = new Jobs(deps, counters);
});
afterEach(() => state.remove());

const now = (): number => timers.bootMs();

/** Runs what is due after moving the clock by `ms`. */
async function at(ms: number, changed: number[] = []): Promise<void> {
  timers.advance(ms - timers.now());
  await jobs.runDue(now(), new Set(changed));
}

/** Writes `job`'s record, as ADD does, and hands the job to the table; the record's name. */
function take(job: BackgroundJob): string {
  const name = writeJob(state, job);
  jobs.take(name, jobRecord(job));
  return name;
}

/** A job whose round 1 went out `ago` ms before the clock's start. */
const sentAgo = (ago: number, extra: Partial<BackgroundJob> = {}): BackgroundJob =>
  jobIn(state, { firstRoundAt: now() - ago, ...extra });
const deferredJob = (extra: Partial<BackgroundJob> = {}): BackgroundJob =>
  jobIn(state, { firstRoundAt: undefined, readyDeadline: now() + 10_000, ...extra });

describe('Jobs: the schedule', () => {
  it("sends a job's later rounds at their offsets, none early, then drops the job", async () => {
    take(sentAgo(0));
    expect(jobs.wakeAt(now())).toBe(now() + 500); // round 2 is further off than CHECK_MS
    await at(999);
    expect(pod.sent).toHaveLength(0);
    expect(jobs.wakeAt(now())).toBe(now() + 1);
    await at(1000);
    expect(pod.sent).toHaveLength(1);
    await at(2999);
    expect(pod.sent).toHaveLength(1);
    expect(jobs.status(now())).toEqual([
      {
        network: 'net',
        containerId: 'c1',
        ifname: 'eth0',
        netns: state.netns,
        nextRoundInMs: 1,
        roundsSent: 2,
        roundsPlanned: 3,
        deferred: false,
      },
    ]);
    await at(3000);
    expect({ sent: pod.sent.length, size: jobs.size, rounds: counters.rounds.sent }).toEqual({
      sent: 2,
      size: 0,
      rounds: 2,
    });
    expect(lines.filter((l) => l.includes('background work scheduled'))).toHaveLength(1);
  });

  it('a job taken from ADD keeps a round up to LATE_GRACE_MS late, and skips older ones (counted)', async () => {
    take(sentAgo(2000));
    expect(jobs.status(now())[0]!.nextRoundInMs).toBe(0); // round 2, 1000 ms late
    take(sentAgo(2001, { containerId: 'c2' }));
    expect(jobs.status(now())[1]!.nextRoundInMs).toBe(999); // round 3
    expect(counters.rounds.skippedLate).toBe(1);
    expect(lines.some((l) => l.includes('rounds skipped') && l.includes('skipped=1'))).toBe(true);
  });

  it('a job whose last round is long past is not scheduled', () => {
    take(sentAgo(10_000));
    expect(jobs.size).toBe(0);
  });

  const overdueTitle =
    'a round overdue by more than LATE_GRACE_MS (the loop was held: SIGSTOP) is skipped before it is sent, counted; ' +
    'the next one goes out on time';
  it(overdueTitle, async () => {
    take(sentAgo(0, { schedule: [0, 1000, 5000] }));
    await at(3500); // round 2 (1000) is 2500 ms late by now
    expect(pod.sent).toHaveLength(0);
    expect(counters.rounds.skippedLate).toBe(1);
    expect(jobs.status(now())[0]!.nextRoundInMs).toBe(1500);
    await at(5000);
    expect(pod.sent).toHaveLength(1);
  });

  const heldTitle =
    'while a command runs on an attachment, its rounds wait (and wake nothing); they go out once it ends, within grace';
  it(heldTitle, async () => {
    const name = take(sentAgo(0));
    const release = jobs.hold(name);
    jobs.hold(name)(); // a second command that ended leaves the first's hold in place
    await at(1000);
    expect(pod.sent).toHaveLength(0);
    expect(jobs.wakeAt(now())).toBe(now() + 500); // CHECK_MS: the held round wakes no poll
    release();
    release(); // once
    await at(1200);
    expect(pod.sent).toHaveLength(1);
  });
});

describe('Jobs: resume from the records', () => {
  it('shows the gateway verdict a record keeps after its burst ended (a restart, a hand-over), until forget', () => {
    const verdict = {
      result: 'answered' as const,
      answered: [{ interface: 'eth0', gateway: '10.88.0.1', mac: '52:54:00:12:34:56', afterMs: 4 }],
      unanswered: [],
      asks: 1,
    };
    const job = sentAgo(5000, { containerId: 'g', gatewayCheck: { windowMs: 1000, gateways: [] } });
    writeFileSync(join(state.dir, 'g@eth0.json'), JSON.stringify({ ...job, originalMacs: [], job, gateway: verdict }));
    jobs.recover(new Map());
    expect(jobs.size).toBe(0); // nothing left to do for it
    expect(jobs.status(now())).toEqual([
      expect.objectContaining({ containerId: 'g', roundsPlanned: 3, deferred: false, gateway: verdict }),
    ]);
    jobs.forget('g@eth0.json', 'cancelled');
    expect(jobs.status(now())).toEqual([]);
  });

  const takesUpJobsTitle =
    'takes up jobs from the records, skipping rounds whose time has passed (no grace), and deferred jobs wait again';
  it(takesUpJobsTitle, () => {
    writeJob(state, sentAgo(500, { containerId: 'a' }));
    writeJob(state, sentAgo(1001, { containerId: 'b', conflicts: 2 }));
    writeJob(state, sentAgo(5000, { containerId: 'c' }));
    writeJob(state, deferredJob({ containerId: 'd' }));
    writeJob(state, jobIn(state, { containerId: 'e', firstRoundAt: undefined, readyDeadline: now() }));
    writeFileSync(join(state.dir, 'junk@eth0.json'), '{"not":"a record"}');
    const macsOnly = { ...jobRecord(sentAgo(0, { containerId: 'm' })), job: undefined };
    writeFileSync(join(state.dir, 'm@eth0.json'), JSON.stringify(macsOnly)); // a MAC to restore, no job
    jobs.recover(new Map());
    const byId = Object.fromEntries(jobs.status(now()).map((s) => [s.containerId, s]));
    expect(Object.keys(byId).sort()).toEqual(['a', 'b', 'd']);
    expect(byId.a).toMatchObject({ nextRoundInMs: 500, roundsSent: 1, deferred: false });
    expect(byId.b).toMatchObject({ nextRoundInMs: 1999, roundsSent: 1 });
    expect(byId.d).toMatchObject({ roundsSent: 0, deferred: true });
    expect(byId.d).not.toHaveProperty('nextRoundInMs');
    expect(counters.deferred.started).toBe(1);
    expect(counters.conflicts).toBe(2); // counted from the record: no ADD reported them to this announcer
    expect(counters.rounds.skippedLate).toBe(0); // recovered: nothing counted as skipped
    expect(jobs.wakeAt(now())).toBe(now()); // the deferred check is due
  });

  it('resumes a job written before node settings: its idleExitMs, metricsFile and rateLimit are ignored', () => {
    const legacy = { ...sentAgo(500), idleExitMs: 100, metricsFile: '/nonexistent/m.prom', rateLimit: { burst: 1 } };
    writeJob(state, legacy as BackgroundJob);
    jobs.recover(new Map());
    expect(jobs.status(now())).toMatchObject([{ nextRoundInMs: 500, roundsSent: 1 }]);
  });

  it('a new ADD of the attachment (another job in the record) replaces the job', () => {
    take(sentAgo(0));
    take(sentAgo(0, { readyDeadline: now() + 20_000, schedule: [0, 300] }));
    expect(jobs.status(now())).toMatchObject([{ nextRoundInMs: 300, roundsPlanned: 2 }]);
  });
});

describe('Jobs: cancel and ends', () => {
  it('after forget (a DEL), nothing more is sent', async () => {
    const name = take(sentAgo(0));
    expect(jobs.forget(name, 'cancelled')).toBe(true);
    await at(5000);
    expect({ sent: pod.sent.length, size: jobs.size }).toEqual({ sent: 0, size: 0 });
    expect(lines.some((l) => l.includes('background work ended') && l.includes('why=cancelled'))).toBe(true);
    expect(jobs.forget(name, 'again')).toBe(false); // nothing left: a no-op
  });

  it('the table is the truth: a record removed changes nothing; the netns path gone ends the work', async () => {
    const name = take(sentAgo(0));
    writeJob(state, sentAgo(0, { containerId: 'c2' }));
    jobs.recover(new Map());
    rmSync(join(state.dir, name));
    await at(1000);
    expect({ size: jobs.size, sent: pod.sent.length }).toEqual({ size: 2, sent: 2 });
    rmSync(state.netns);
    await at(3000);
    expect({ size: jobs.size, sent: pod.sent.length }).toEqual({ size: 0, sent: 2 });
    expect(lines.filter((l) => l.includes('why="pod gone or work ended"'))).toHaveLength(2);
  });
});

describe('Jobs: deferred waits', () => {
  const looksAtPodTitle =
    'looks at the pod when its event sockets stir or its check is due, ' +
    'sends round 1 and writes when into the record';
  it(looksAtPodTitle, async () => {
    const name = take(deferredJob());
    pod.links = [link({ up: false })];
    await at(0);
    expect(jobs.eventFds()).toEqual([50, 51]);
    expect(jobs.wakeAt(now())).toBe(now() + 500);
    pod.links = [link()];
    await at(100); // not due, nothing stirred
    expect(pod.sent).toHaveLength(0);
    await at(200, [51]);
    expect(pod.sent).toHaveLength(1);
    expect(pod.drained).toBeGreaterThan(0);
    expect({ eventFds: jobs.eventFds(), open: pod.open }).toEqual({ eventFds: [], open: 0 });
    const record = JSON.parse(readFileSync(join(state.dir, name), 'utf8'));
    expect(record.job.firstRoundAt).toBe(now());
    expect(locked).toEqual([join(state.dir, 'c1@eth0.lock')]);
    await at(1200);
    expect(pod.sent).toHaveLength(2);
  });

  it('ends a wait whose pod is gone, closing its sockets', async () => {
    take(deferredJob());
    pod.links = [link({ up: false })];
    await at(0);
    rmSync(state.netns);
    await at(500);
    expect({ size: jobs.size, open: pod.open, gone: counters.deferred.gone }).toEqual({ size: 0, open: 0, gone: 1 });
    expect(lines.some((l) => l.includes('why="pod gone before it was ready"'))).toBe(true);
  });

  it('close() closes every wait', async () => {
    pod.links = [link({ up: false })];
    take(deferredJob());
    await at(0);
    jobs.close();
    expect(pod.open).toBe(0);
  });
});

describe('Jobs: a throw on every path', () => {
  it('the first hold-back of a round counts it as delayed', async () => {
    take(sentAgo(0));
    budget.answers.push(100);
    await at(1000);
    expect(counters.rateLimited.delayed).toBe(1);
  });

  const socketsThatFailTitle =
    'sockets that fail to close when a wait is forgotten are counted; close() ' +
    'reports the first failure once all are closed';
  it(socketsThatFailTitle, async () => {
    pod.links = [link({ up: false })];
    const name = take(deferredJob());
    take(deferredJob({ containerId: 'c2' }));
    await at(0);
    expect(pod.open).toBe(2);
    pod.closeError = new Error('EIO on close');
    jobs.forget(name, 'cancelled');
    expect(counters.errors).toBe(1);
    expect(lines.some((l) => l.includes('cannot close the pod sockets') && l.includes('EIO on close'))).toBe(true);
    expect(() => jobs.close()).toThrow('EIO on close');
    expect(pod.open).toBe(0);
  });

  it('a round that throws is counted, skipped, and the other jobs go on', async () => {
    take(sentAgo(0));
    take(sentAgo(0, { containerId: 'c2' }));
    budget.answers.push(new Error('bucket on fire'));
    await at(1000);
    expect({ errors: counters.errors, sent: pod.sent.length, size: jobs.size }).toEqual({
      errors: 1,
      sent: 1,
      size: 2,
    });
    expect(jobs.status(now()).map((s) => s.nextRoundInMs)).toEqual([2000, 2000]);
    expect(lines.some((l) => l.includes('background work failed') && l.includes('bucket on fire'))).toBe(true);
  });

  const deferredWaitThatTitle =
    'a deferred wait that throws looks again at its next check with new ' +
    'sockets, and ends once its ready deadline passed';
  it(deferredWaitThatTitle, async () => {
    take(deferredJob({ readyDeadline: now() + 1000 }));
    budget.answers.push(new Error('boom'));
    await at(0);
    expect({ errors: counters.errors, size: jobs.size, open: pod.open, wake: jobs.wakeAt(now()) - now() }).toEqual({
      errors: 1,
      size: 1,
      open: 0,
      wake: 500,
    });
    budget.answers.push(new Error('boom'));
    await at(500);
    expect(pod.opened).toBe(2);
    budget.answers.push(new Error('boom'));
    await at(1000);
    expect({ errors: counters.errors, size: jobs.size, sent: pod.sent.length }).toEqual({
      errors: 3,
      size: 0,
      sent: 0,
    });
    expect(lines.some((l) => l.includes('why="failed until its ready deadline"'))).toBe(true);
  });
});
