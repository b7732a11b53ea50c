// The announcer's table of work (src/daemon/table.ts), driven as the announcer drives it: ADD's `added`, the records
// and a hand-over at start (`recover`), `runDue` on a manual clock; read back through status, the counters, the log
// records, the pod's frames and the records on disk.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BackgroundJob } from '../../../src/announce/background-job';
import { firstVerdict, OFF_VERDICT, type GatewayVerdict } from '../../../src/announce/gateway-verdict';
import { readRecordFile } from '../../../src/announce/state';
import { NO_VIEW } from '../../../src/daemon/rounds';
import { takeHandover, writeHandover } from '../../../src/daemon/table';
import { HANDOVER_FILE } from '../../../src/state-files';
import { identityCallerViews, testAnnouncer } from '../../support/announcer';
import { gatewayReply, jobIn, jobRecord, link, TableWorld, writeJob } from '../../support/daemon-fakes';

let w: TableWorld;
beforeEach(() => {
  w = new TableWorld();
});
afterEach(() => w.state.remove());

const GWS = [
  { interface: 'eth0', gateway: '10.88.0.1' },
  { interface: 'eth0', gateway: '10.88.0.254' },
];
const ANSWERED: GatewayVerdict = {
  result: 'answered',
  answered: [{ ...GWS[0]!, mac: '52:54:00:12:34:56', afterMs: 250 }],
  unanswered: [],
  asks: 1,
};
const MACS = [{ name: 'eth0', mac: '02:00:00:00:00:01' }];
const why = (): unknown[] => w.logged('background work ended').map((r) => r.fields.why);

describe('Jobs: the schedule', () => {
  const title =
    "sends a job's later rounds at their offsets, none early, then drops the job; it wakes for nothing while idle, " +
    'and a burst without a check leaves its record as ADD wrote it';
  it(title, async () => {
    expect(w.wakeIn()).toBe(Infinity);
    const name = w.add(w.sentAgo(0));
    const written = readFileSync(join(w.state.dir, name), 'utf8');
    expect(w.wakeIn()).toBe(1000); // round 2: no poll before
    await w.at(999);
    expect([w.pod.sent.length, w.wakeIn()]).toEqual([0, 1]);
    await w.at(1000);
    await w.at(2999);
    expect(w.status()).toEqual([
      {
        network: 'net',
        containerId: 'c1',
        ifname: 'eth0',
        netns: w.state.netns,
        nextRoundInMs: 1,
        roundsSent: 2,
        roundsPlanned: 3,
        deferred: false,
      },
    ]);
    expect(w.pod.sent).toHaveLength(1);
    await w.at(3000);
    const got = { sent: w.pod.sent.length, size: w.a.jobs.size, rounds: w.a.counters.rounds.sent };
    expect(got).toEqual({ sent: 2, size: 0, rounds: 2 });
    expect(w.wakeIn()).toBe(Infinity);
    expect(w.logged('background work scheduled')).toMatchObject([{ fields: { how: 'added', next: 2, of: 3 } }]);
    expect(readFileSync(join(w.state.dir, name), 'utf8')).toBe(written);
  });

  it('a job ADD just left keeps a round up to LATE_GRACE_MS late, and skips older ones (counted)', () => {
    w.add(w.sentAgo(2000));
    w.add(w.sentAgo(2001, { containerId: 'c2' }));
    expect(w.status().map((s) => s.nextRoundInMs)).toEqual([0, 999]); // round 2, 1000 ms late; round 3
    expect(w.a.counters.rounds.skippedLate).toBe(1);
    const seen = w.logged('rounds skipped: their time has passed');
    expect(seen).toMatchObject([{ level: 'info', fields: { skipped: 1 } }]);
    w.add(w.sentAgo(10_000, { containerId: 'c3' })); // its last round long past: not scheduled
    expect(w.a.jobs.size).toBe(2);
  });

  it.each([
    { late: 'a grace second late: sent', schedule: [0, 1000, 3000], at: 2000, sent: 1, skipped: 0, next: 1000 },
    { late: 'overdue: skipped, not sent', schedule: [0, 1000, 5000], at: 3500, sent: 0, skipped: 1, next: 1500 },
    { late: 'overdue, as is the last: the burst is over', schedule: [0, 1000, 3000], at: 4001, sent: 0, skipped: 2 },
  ])('a round due when the loop was held (SIGSTOP), $late', async ({ schedule, at, sent, skipped, next }) => {
    w.add(w.sentAgo(0, { schedule }));
    await w.at(at);
    const got = {
      sent: w.pod.sent.length,
      skipped: w.a.counters.rounds.skippedLate,
      next: w.status()[0]?.nextRoundInMs,
    };
    expect(got).toEqual({ sent, skipped, next });
    const said = w.logged('rounds skipped: their time has passed').map((r) => r.fields.skipped);
    expect(said).toEqual(skipped ? [skipped] : []);
  });

  it(
    'while a command runs on an attachment, its rounds ' + 'wait (and wake nothing); they go out once it ends',
    async () => {
      const name = w.add(w.sentAgo(0));
      const release = w.a.jobs.hold(name);
      w.a.jobs.hold(name)(); // a second command that ended leaves the first's hold in place
      await w.at(1000);
      expect([w.pod.sent.length, w.wakeIn()]).toEqual([0, Infinity]);
      release();
      await w.at(1200);
      expect(w.pod.sent).toHaveLength(1);
    },
  );
});

describe('Jobs: what ADD reports (added)', () => {
  const checked = (id: string): BackgroundJob =>
    w.sentAgo(0, { containerId: id, gatewayCheck: { windowMs: 200, gateways: [GWS[0]!] } });

  const title =
    "counts ADD's frames, round 1, conflicts and final verdict, observes its times; the verdict goes with the job, " +
    'and a record without a job ends the work and keeps nothing for status';
  it(title, async () => {
    const job = checked('a');
    const name = writeJob(w.state, job);
    const sent = { garpRequest: 2, garpReply: 0, na: 1 };
    w.a.jobs.added(name, jobRecord(job), { sent, conflicts: 1, gateway: ANSWERED }, undefined, w.now() - 3);
    w.add(checked('p'), { gateway: firstVerdict([GWS[0]!]) });
    const off = w.add(checked('o'));
    w.a.jobs.added(
      off,
      { ...jobRecord(checked('o')), job: undefined },
      { sent: { ...sent, na: 0 }, gateway: OFF_VERDICT },
    );
    expect(w.a.counters).toMatchObject({
      frames: { garpRequest: 4, garpReply: 0, na: 1 },
      rounds: { sent: 2 },
      conflicts: 1,
      gateway: { answered: 1, noAnswer: 0, off: 1 }, // pending: not counted
    });
    const got = w.status().map((s) => [s.containerId, s.gateway?.result]);
    expect(got).toEqual([
      ['a', 'answered'],
      ['p', 'pending'],
    ]);
    expect(why()).toEqual(['no job']);
    const text = await w.a.metrics.text();
    expect(text).toContain('cni_announcer_add_to_first_round_seconds_sum 0.003\n'); // only with takenAt
    expect(text).toContain('cni_announcer_add_to_first_round_seconds_count 1\n');
    expect(text).toContain('cni_announcer_gateway_answer_seconds_sum 0.25\n');
  });

  it('a new ADD of the attachment (another job in the record) replaces the job', () => {
    w.add(w.sentAgo(0));
    w.add(w.sentAgo(0, { readyDeadline: w.now() + 20_000, schedule: [0, 300] }));
    expect(w.status()).toMatchObject([{ nextRoundInMs: 300, roundsPlanned: 2 }]);
  });
});

describe('Jobs: the records at start (recover)', () => {
  it('shows the gateway verdict a record keeps after its burst ended (a restart, a hand-over), until cancel', () => {
    const job = w.sentAgo(5000, { containerId: 'g', gatewayCheck: { windowMs: 1000, gateways: [] } });
    writeJob(w.state, job, { ...jobRecord(job), gateway: ANSWERED });
    w.a.jobs.recover(new Map());
    expect(w.a.jobs.size).toBe(0); // nothing left to do for it
    expect(w.status()).toEqual([
      expect.objectContaining({ containerId: 'g', roundsPlanned: 3, deferred: false, gateway: ANSWERED }),
    ]);
    expect(w.a.jobs.cancel('g@eth0.json')).toBe(false); // no work, but the verdict goes
    expect(w.status()).toEqual([]);
  });

  const takesUpTitle =
    'takes up jobs from the records, skipping rounds whose time has passed (no grace), and deferred jobs wait again';
  it(takesUpTitle, () => {
    writeJob(w.state, w.sentAgo(500, { containerId: 'a' }));
    writeJob(w.state, w.sentAgo(1001, { containerId: 'b', conflicts: 2 }));
    writeJob(w.state, w.sentAgo(5000, { containerId: 'c' }));
    writeJob(w.state, w.waiting({ containerId: 'd' }));
    writeJob(w.state, jobIn(w.state, { containerId: 'e', firstRoundAt: undefined, readyDeadline: w.now() }));
    writeFileSync(join(w.state.dir, 'junk@eth0.json'), '{"not":"a record"}');
    writeJob(w.state, w.sentAgo(0, { containerId: 'm' }), {
      ...jobRecord(w.sentAgo(0, { containerId: 'm' })),
      job: undefined,
    });
    // A job written before node settings: its idleExitMs, metricsFile and rateLimit are ignored.
    writeJob(w.state, {
      ...w.sentAgo(500, { containerId: 'l' }),
      idleExitMs: 100,
      rateLimit: { burst: 1 },
    } as BackgroundJob);
    w.a.jobs.recover(new Map());
    const byId = Object.fromEntries(w.status().map((s) => [s.containerId, s]));
    expect(Object.keys(byId).sort()).toEqual(['a', 'b', 'd', 'l']);
    expect(byId.a).toMatchObject({ nextRoundInMs: 500, roundsSent: 1, deferred: false });
    expect(byId.l).toMatchObject({ nextRoundInMs: 500, roundsSent: 1 });
    expect(byId.b).toMatchObject({ nextRoundInMs: 1999, roundsSent: 1 });
    expect(byId.d).toMatchObject({ roundsSent: 0, deferred: true });
    expect(byId.d).not.toHaveProperty('nextRoundInMs');
    // The conflicts are counted from the record (no ADD reported them to this announcer); recovered, no round is
    // counted as skipped.
    expect(w.a.counters).toMatchObject({ deferred: { started: 1 }, conflicts: 2, rounds: { skippedLate: 0 } });
    expect(w.wakeIn()).toBe(0); // the deferred check is due
  });
});

describe('Jobs: the hand-over', () => {
  it.each([
    ['the same job (its schedule aside): from its next round', (j: BackgroundJob) => ({ ...j, schedule: [0] }), 2],
    ['another netns (dev)', (j: BackgroundJob) => ({ ...j, netnsId: { ...j.netnsId, dev: j.netnsId.dev + 1 } }), 1],
    ['another netns (ino)', (j: BackgroundJob) => ({ ...j, netnsId: { ...j.netnsId, ino: j.netnsId.ino + 1 } }), 1],
    ['another readyDeadline', (j: BackgroundJob) => ({ ...j, readyDeadline: j.readyDeadline + 1 }), 1],
    ['no round 1 yet', (j: BackgroundJob) => ({ ...j, firstRoundAt: undefined }), 1],
  ])("goes on from a burst handed over only for the same ADD's job: %s", (_, handed, roundsSent) => {
    const job = w.sentAgo(0);
    writeJob(w.state, job);
    writeHandover(w.state.dir, new Map([['c1@eth0.json', { job: handed(job), next: 2 }]]));
    w.a.jobs.recover(takeHandover(w.state.dir));
    expect(w.status()).toMatchObject([{ roundsSent, nextRoundInMs: roundsSent === 2 ? 3000 : 1000 }]);
  });

  it('hands over where each burst stands with its verdict so far (deferred waits left out), once', async () => {
    w.pod.arpFrames = [gatewayReply()];
    const name = w.add(w.sentAgo(0, { gatewayCheck: { windowMs: 200, gateways: GWS } }), {
      gateway: firstVerdict(GWS),
    });
    await w.at(0);
    await w.at(7, [60]);
    w.add(w.waiting({ containerId: 'd' }));
    w.pod.links = [link({ up: false })];
    await w.at(1000);
    const progress = w.a.jobs.progress();
    expect([...progress.keys()]).toEqual([name]);
    writeHandover(w.state.dir, progress);
    const next = testAnnouncer(w.state, w.pod, w.timers);
    next.jobs.recover(takeHandover(w.state.dir));
    expect(next.jobs.status(w.now())).toMatchObject([
      { roundsSent: 2, gateway: { result: 'pending', answered: [{ gateway: '10.88.0.1', afterMs: 7 }] } },
      { containerId: 'd', deferred: true },
    ]);
    expect(existsSync(join(w.state.dir, HANDOVER_FILE))).toBe(false);
    expect(takeHandover(w.state.dir)).toEqual(new Map());
  });

  const checksTitle =
    'leaves out what does not check (a build from before node settings: its idleExitMs and metricsFile ignored), and ' +
    'removes the file whatever it holds';
  it(checksTitle, () => {
    const file = join(w.state.dir, HANDOVER_FILE);
    for (const text of ['{"c1@eth0.json":', 'null', '7']) {
      writeFileSync(file, text);
      expect([text, takeHandover(w.state.dir), existsSync(file)]).toEqual([text, new Map(), false]);
    }
    const job = jobIn(w.state);
    const old = { ...job, idleExitMs: 100, metricsFile: 'relative.prom', rateLimit: { burst: 'x' } };
    const entries = {
      good: { job, next: 1, gateway: { result: 'nonsense' } }, // a verdict that does not check is left out alone
      old: { job: old, next: 2 },
      zero: { job, next: 0 },
      half: { job, next: 1.5 },
      badJob: { job: { ...job, schedule: 'x' }, next: 1 },
      bare: 3,
      none: null,
    };
    writeFileSync(file, JSON.stringify(entries));
    const taken = takeHandover(w.state.dir);
    expect([[...taken.keys()], taken.get('good')]).toEqual([['good', 'old'], { job, next: 1 }]);
    expect(taken.get('old')).toMatchObject({ job: { containerId: 'c1' }, next: 2 });
    expect(existsSync(file)).toBe(false);
  });
});

describe('Jobs: the journal (a deferred round 1, written from the table)', () => {
  const lock = () => w.a.attachmentLocks.take('c1@eth0', 0);

  const title =
    "writes the record ADD wrote, round 1 noted, under the attachment's lock (let go after); it passes the record " +
    'schema, and the work carries it on';
  it(title, async () => {
    const job = w.waiting();
    const name = w.add(job, {}, { ...jobRecord(job), originalMacs: MACS });
    await w.at(0);
    const record = { ...jobRecord(job), originalMacs: MACS, job: { ...job, firstRoundAt: w.now() } };
    expect(readRecordFile(join(w.state.dir, name))).toEqual({ kind: 'ok', record });
    expect(await lock()).toBeDefined();
    expect(w.a.jobs.progress().get(name)?.job.firstRoundAt).toBe(w.now());
  });

  it.each([
    ['while the lock is held (an ADD or DEL on the attachment)', async () => void (await lock())],
    [
      'once the table no longer holds the work',
      async () => {
        const take = w.a.attachmentLocks.take.bind(w.a.attachmentLocks);
        w.a.attachmentLocks.take = (...args) => (w.a.jobs.cancel('c1@eth0.json'), take(...args));
      },
    ],
  ])('writes nothing %s', async (_, meanwhile) => {
    const name = w.add(w.waiting());
    await meanwhile();
    await w.at(0);
    expect([w.pod.sent.length, w.recorded(name).job.firstRoundAt, w.a.counters.errors]).toEqual([1, undefined, 0]);
  });

  it.each([
    ['a lock that throws', 'EMFILE', () => void (w.a.attachmentLocks.take = () => Promise.reject(new Error('EMFILE')))],
    ['a record it cannot write', 'ENOENT', () => void (w.a.stateDir = join(w.state.dir, 'missing'))],
  ])('counts and logs %s', async (_, error, fail) => {
    w.add(w.waiting());
    fail();
    await w.at(0);
    const what = 'cannot record that round 1 went out: an announcer started later would wait for the pod again';
    expect(w.logged(what)).toMatchObject([{ level: 'warn', fields: { error: expect.stringContaining(error) } }]);
    expect([w.a.counters.errors, w.pod.sent.length]).toEqual([1, 1]);
  });
});

describe('Jobs: ends', () => {
  it('after cancel (a DEL), nothing more is sent', async () => {
    const name = w.add(w.sentAgo(0));
    expect(w.a.jobs.cancel(name)).toBe(true);
    await w.at(5000);
    const got = { sent: w.pod.sent.length, size: w.a.jobs.size, why: why() };
    expect(got).toEqual({ sent: 0, size: 0, why: ['cancelled'] });
    expect(w.a.jobs.cancel(name)).toBe(false); // nothing left: a no-op
  });

  it.each([
    ['removed', () => rmSync(w.state.netns)],
    [
      'names another netns',
      () => (writeFileSync(`${w.state.netns}.new`, ''), renameSync(`${w.state.netns}.new`, w.state.netns)),
    ],
  ])('the table is the truth: a record removed changes nothing; the netns path %s ends the work', async (_, gone) => {
    const name = w.add(w.sentAgo(0));
    writeJob(w.state, w.sentAgo(0, { containerId: 'c2' }));
    w.a.jobs.recover(new Map()); // c1 is in the table already: taken once
    rmSync(join(w.state.dir, name));
    await w.at(1000);
    expect({ size: w.a.jobs.size, sent: w.pod.sent.length }).toEqual({ size: 2, sent: 2 });
    gone();
    await w.at(3000);
    expect({ size: w.a.jobs.size, sent: w.pod.sent.length }).toEqual({ size: 0, sent: 2 });
    expect(why()).toEqual(['pod gone or work ended', 'pod gone or work ended']);
  });

  it("ends the work when the caller's view cannot be had again: a WARN says so", async () => {
    w.add(w.sentAgo(0));
    w.a.views = Object.create(identityCallerViews, { forRecorded: { value: () => undefined } });
    await w.at(1000);
    expect(w.logged(NO_VIEW)).toMatchObject([{ level: 'warn' }]);
    expect([w.pod.opened, why()]).toEqual([0, ['pod gone or work ended']]);
  });

  it('ends a deferred wait whose pod is gone, closing its sockets', async () => {
    w.add(w.waiting());
    w.pod.links = [link({ up: false })];
    await w.at(0);
    rmSync(w.state.netns);
    await w.at(500);
    const got = { size: w.a.jobs.size, open: w.pod.open, gone: w.a.counters.deferred.gone };
    expect(got).toEqual({ size: 0, open: 0, gone: 1 });
    expect(why()).toEqual(['pod gone before it was ready']);
  });

  const closeTitle =
    'close() closes every wait, once; sockets that fail to close on cancel are counted, and close() throws the ' +
    'first failure once all are closed';
  it(closeTitle, async () => {
    w.pod.links = [link({ up: false })];
    const name = w.add(w.waiting());
    w.add(w.waiting({ containerId: 'c2' }));
    w.add(w.waiting({ containerId: 'c3' }));
    await w.at(0);
    expect(w.pod.open).toBe(3);
    w.pod.closeError = new Error('EIO on close');
    w.a.jobs.cancel(name);
    expect(w.a.counters.errors).toBe(1);
    const seen = w.logged('cannot close the pod sockets');
    expect(seen).toMatchObject([{ level: 'error', fields: { error: 'EIO on close' } }]);
    expect(() => w.a.jobs.close()).toThrow('EIO on close');
    w.pod.closeError = undefined;
    w.a.jobs.close();
    expect({ open: w.pod.open, closed: w.closed }).toEqual({ open: 0, closed: w.pod.released });
  });
});

describe('Jobs: a throw on every path', () => {
  it('a round that throws is counted, skipped, and the other jobs go on', async () => {
    w.add(w.sentAgo(0));
    w.add(w.sentAgo(0, { containerId: 'c2' }));
    w.a.budget.answers.push(new Error('bucket on fire'));
    await w.at(1000);
    const got = { errors: w.a.counters.errors, sent: w.pod.sent.length, size: w.a.jobs.size };
    expect(got).toEqual({ errors: 1, sent: 1, size: 2 });
    expect(w.status().map((s) => s.nextRoundInMs)).toEqual([2000, 2000]);
    const found = w.logged('background work failed');
    expect(found).toMatchObject([{ level: 'error', fields: { round: 2, error: 'bucket on fire' } }]);
  });

  const deferredTitle =
    'a deferred wait that throws looks again at its next check with new sockets, and ends once its ready deadline ' +
    'passed';
  it(deferredTitle, async () => {
    w.add(w.waiting({ readyDeadline: w.now() + 1000 }));
    w.a.budget.answers.push(new Error('boom'), new Error('boom'), new Error('boom'));
    await w.at(0);
    const got = { errors: w.a.counters.errors, size: w.a.jobs.size, open: w.pod.open, wake: w.wakeIn() };
    expect(got).toEqual({ errors: 1, size: 1, open: 0, wake: 500 });
    await w.at(500);
    expect(w.pod.opened).toBe(2);
    await w.at(1000);
    const later = { errors: w.a.counters.errors, size: w.a.jobs.size, sent: w.pod.sent.length };
    expect(later).toEqual({ errors: 3, size: 0, sent: 0 });
    expect(why()).toEqual(['failed until its ready deadline']);
  });
});
