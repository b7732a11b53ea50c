// The node-local proof's window in the gateway check (gateway-work.ts), on a
// bridged host: the window opens with round 1's first ask, follows the host's
// FDB through its notifications, and its proofs reach the verdict, the status
// and the record, written once per attachment. The first visit may use the
// session ADD opened.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BackgroundJob } from '../../../src/announce/background-job';
import { firstVerdict, type GatewayVerdict } from '../../../src/announce/gateway-verdict';
import type { AttachmentRecord } from '../../../src/announce/state';
import { newCounters, type Counters } from '../../../src/daemon/counters';
import { openSession } from '../../../src/announce/session';
import { Jobs } from '../../../src/daemon/jobs';
import {
  BridgedHost,
  bridgedPodLink,
  fdbEntry,
  neighNotification,
  PORT,
  TWIN,
  WINDOW_FD,
} from '../../support/fake-bridged-host';
import {
  FakePod,
  gatewayReply,
  jobIn,
  makeStateDir,
  ScriptedBudget,
  jobRecord,
  writeJob,
  type StateDir,
} from '../../support/daemon-fakes';
import { fakeJobDeps } from '../../support/fake-job-deps';
import { ManualTimers } from '../../support/manual-timers';

const GW = { interface: 'eth0', gateway: '10.88.0.1' };
const RECEIVER = 60;

let state: StateDir;
let pod: FakePod;
let host: BridgedHost;
let budget: ScriptedBudget;
let timers: ManualTimers;
let counters: Counters;
let records: number;
let jobs: Jobs;

beforeEach(() => {
  state = makeStateDir();
  host = new BridgedHost();
  pod = new FakePod();
  pod.links = [bridgedPodLink()];
  pod.hostSide = (groups) => host.sockets(groups);
  pod.arpFrames = [];
  budget = new ScriptedBudget();
  timers = new ManualTimers();
  counters = newCounters();
  records = 0;
  jobs = new Jobs(
    fakeJobDeps(state, pod, timers, {
      budget: budget.budget,
      // Each lock taken is one write of the record.
      lockFile: async (path) => (records++, { path, release: () => undefined }),
    }),
    counters,
  );
});
afterEach(() => state.remove());

const now = (): number => timers.bootMs();

async function at(ms: number, changed: number[] = []): Promise<void> {
  timers.advance(ms - timers.now());
  await jobs.runDue(now(), new Set(changed));
}

/** ADD hands over a job whose round 1 went out now, the check on (windows of 200 ms), with a pending verdict. */
function added(extra: Partial<BackgroundJob> = {}): string {
  const job = jobIn(state, { firstRoundAt: now(), gatewayCheck: { windowMs: 200, gateways: [GW] }, ...extra });
  const name = writeJob(state, job);
  jobs.take(name, jobRecord(job), firstVerdict([GW]));
  return name;
}

const recorded = (name: string): GatewayVerdict | undefined =>
  (JSON.parse(readFileSync(join(state.dir, name), 'utf8')) as AttachmentRecord).gateway;
const verdictOf = (): GatewayVerdict | undefined => jobs.status(now())[0]?.gateway;
const proof = (fdb: object) => [
  { interface: 'eth0', seen: { fdb, neighbours: [{ address: '10.88.0.5', kind: 'absent' }] } },
];
const CONVERGED = proof({ kind: 'converged', port: 'vethpod' });

describe('the node window on a bridged host', () => {
  const oneWriteTitle =
    'opens with the first ask in one visit, follows the FDB, and records the final verdict once, with its proofs';
  it(oneWriteTitle, async () => {
    const name = added();
    pod.arpFrames = [gatewayReply()];
    await at(0);
    expect({ windows: host.windows, visits: pod.opened, open: pod.open }).toEqual({ windows: 1, visits: 1, open: 0 });
    expect(jobs.eventFds()).toEqual(expect.arrayContaining([RECEIVER, WINDOW_FD]));
    const written = records;
    await at(7, [RECEIVER]);
    expect(verdictOf()).toMatchObject({ result: 'answered' });
    expect(records).toBe(written); // the window is open: it records the verdict when it closes
    expect(recorded(name)).toBeUndefined();
    expect(jobs.wakeAt(now())).toBe(now() + 193); // the window's end at 200, before round 2 at 1000
    host.queued = [neighNotification(fdbEntry(PORT))];
    await at(50, [WINDOW_FD]);
    await at(199);
    expect({ windowsClosed: host.windowsClosed, node: verdictOf()?.node }).toEqual({ windowsClosed: 0 });
    await at(200);
    expect(host.windowsClosed).toBe(1);
    expect(jobs.eventFds()).not.toContain(WINDOW_FD);
    expect(verdictOf()).toMatchObject({ result: 'answered', node: CONVERGED });
    expect(records).toBe(written + 1);
    expect(recorded(name)).toMatchObject({ result: 'answered', node: CONVERGED });
  });

  it('keeps a one-round job alive while its window is open, after a final verdict', async () => {
    added({ schedule: [0] });
    pod.arpFrames = [gatewayReply()];
    await at(0);
    await at(7, [RECEIVER]);
    expect(verdictOf()).toMatchObject({ result: 'answered' });
    await at(100);
    expect(jobs.size).toBe(1);
    await at(200);
    expect(jobs.size).toBe(0);
    expect(counters.nodeMismatches.notLearned).toBe(1);
    expect(jobs.status(now())[0]?.gateway?.node).toEqual(proof({ kind: 'not-learned' }));
  });

  it('a window that closes before the verdict is final leaves the record alone until the verdict is', async () => {
    budget.answers.push(300); // the first ask waits for its tokens: the window closes first
    const name = added();
    host.dumped = [fdbEntry(PORT), fdbEntry(TWIN)];
    await at(0);
    expect(jobs.wakeAt(now())).toBe(now() + 200); // the window's end comes before the held ask at 300
    host.queued = [neighNotification(fdbEntry(TWIN))];
    await at(100, [WINDOW_FD]);
    const written = records;
    await at(200);
    const node = proof({ kind: 'duplicate', port: 'vethpod', others: ['vethtwin'] });
    expect(verdictOf()).toMatchObject({ result: 'pending', node });
    expect(counters.nodeMismatches.duplicateMac).toBe(1);
    expect({ records, recorded: recorded(name) }).toEqual({ records: written, recorded: undefined });
    await at(300);
    expect(jobs.wakeAt(now())).toBe(now() + 200); // the ask's window's end, the node's closed
    await at(500, [RECEIVER]);
    expect({ verdict: verdictOf()?.result, recorded: recorded(name) }).toEqual({ verdict: 'pending' });
    for (const t of [1000, 1200, 3000, 3200]) await at(t, [RECEIVER]);
    expect(recorded(name)).toMatchObject({ result: 'no-answer', node });
    expect(host.windows).toBe(1); // one window, after round 1 only
  });

  it('DEL while the window is open closes it, and no proof is taken', async () => {
    const name = added();
    await at(0);
    jobs.forget(name, 'DEL');
    expect(host.windowsClosed).toBe(1);
    await at(200, [WINDOW_FD]);
    expect({ windows: host.windows, status: jobs.status(now()) }).toEqual({ windows: 1, status: [] });
  });
});

describe('the check when the pod cannot be asked from now', () => {
  it('a pod that cannot be entered: no window, no ask, nothing thrown; it asks after the next round', async () => {
    const name = added();
    pod.openError = new Error('no netns');
    await at(0);
    expect({ windows: host.windows, asks: counters.gateway.asks, errors: counters.errors }).toEqual({
      windows: 0,
      asks: 0,
      errors: 0,
    });
    expect(verdictOf()).toEqual(firstVerdict([GW])); // no node proof when the pod was not seen
    pod.openError = undefined;
    pod.arpFrames = [gatewayReply()];
    await at(1000); // round 2
    await at(1010, [RECEIVER]);
    expect(recorded(name)).toMatchObject({ result: 'answered', answered: [{ afterMs: 1010 }] });
    expect(recorded(name)?.node).toBeUndefined();
  });

  it('a pod not ready to ask from asks after the next round', async () => {
    added();
    pod.links = [{ ...bridgedPodLink(), up: false }];
    await at(0);
    expect({ asks: counters.gateway.asks, errors: counters.errors, wake: jobs.wakeAt(now()) }).toEqual({
      asks: 0,
      errors: 0,
      wake: now() + 200, // the node window's end: no ask is planned before round 2
    });
    pod.links = [bridgedPodLink()];
    await at(1000);
    expect(counters.gateway.asks).toBe(1);
  });

  it("an ask the budget held times its answer from round 1, taking no credit, on the loop's clock", async () => {
    budget.answers.push(300);
    const name = added();
    pod.arpFrames = [gatewayReply()];
    await at(0);
    expect(budget.calls[0]).toMatchObject({ at: now(), onCredit: false });
    await at(300);
    await at(307, [RECEIVER]);
    expect(recorded(name)).toMatchObject({ result: 'answered', answered: [{ afterMs: 307 }] });
  });

  it('a pod with no address to ask from sends nothing and counts no ask', async () => {
    added({ interfaces: [{ name: 'eth0', ipv4: ['10.88.0.9'], ipv6: [] }] });
    await at(0);
    expect({ asks: counters.gateway.asks, errors: counters.errors, sent: pod.sent.length }).toEqual({
      asks: 0,
      errors: 0,
      sent: 0,
    });
  });

  it('a work that ends with its check pending (the pod gone) settles it as no-answer, counted', async () => {
    const name = added();
    await at(0);
    await at(200, [RECEIVER]);
    pod.links = [];
    await at(1000); // round 2 finds eth0 gone: the work ends
    expect(jobs.size).toBe(0);
    expect({ noAnswer: counters.gateway.noAnswer, result: verdictOf()?.result }).toEqual({
      noAnswer: 1,
      result: 'no-answer',
    });
    expect(recorded(name)).toMatchObject({ result: 'no-answer', asks: 1 });
  });
});

describe("ADD's open session", () => {
  /** ADD's session on the pod, still open, as ADD hands it to the table with its job. */
  const addSession = (job: BackgroundJob) => openSession({ open: pod.opener() }, job.netns, ['eth0'], []);
  const checked = () => jobIn(state, { firstRoundAt: now(), gatewayCheck: { windowMs: 200, gateways: [GW] } });

  const firstVisitTitle =
    "serves the check's first visit (the ask and the node window): the pod is not entered again, and the session " +
    'closes at the end of that turn';
  it(firstVisitTitle, async () => {
    const job = checked();
    const session = addSession(job);
    pod.arpFrames = [gatewayReply()];
    expect(jobs.take(writeJob(state, job), jobRecord(job), firstVerdict([GW]), session)).toBe(true);
    expect({ opened: pod.opened, open: pod.open }).toEqual({ opened: 1, open: 1 });
    await at(0);
    expect({ windows: host.windows, asks: counters.gateway.asks }).toEqual({ windows: 1, asks: 1 });
    expect({ opened: pod.opened, open: pod.open, released: pod.released.length }).toEqual({
      opened: 1,
      open: 0,
      released: 1,
    });
  });

  it('serves the node window alone when ADD (require) already has the final verdict', async () => {
    const job = checked();
    const answered = { ...firstVerdict([GW]), result: 'answered' as const, unanswered: [], asks: 1 };
    expect(jobs.take(writeJob(state, job), jobRecord(job), answered, addSession(job))).toBe(true);
    await at(0);
    expect({ windows: host.windows, asks: counters.gateway.asks }).toEqual({ windows: 1, asks: 0 });
    expect({ opened: pod.opened, open: pod.open }).toEqual({ opened: 1, open: 0 });
  });

  it('is closed when the work ends before its first visit (DEL), and is not kept without a visit due', async () => {
    const job = checked();
    const name = writeJob(state, job);
    expect(jobs.take(name, jobRecord(job), firstVerdict([GW]), addSession(job))).toBe(true);
    expect(jobs.forget(name, 'cancelled')).toBe(true);
    expect({ opened: pod.opened, open: pod.open }).toEqual({ opened: 1, open: 0 });
    const off = jobIn(state, { firstRoundAt: now() }); // no gateway check: nothing to visit
    expect(jobs.take(name, jobRecord(off), undefined, addSession(off))).toBe(false);
    const deferred = { ...checked(), firstRoundAt: undefined }; // round 1 not sent: the check waits for it
    expect(jobs.take(name, jobRecord(deferred), firstVerdict([GW]), addSession(deferred))).toBe(false);
  });
});
