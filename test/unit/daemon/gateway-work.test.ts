// The gateway check in the announcer's table of work (gateway-work.ts,
// new-work.ts), driven through Jobs with fakes: asks after ADD and after each
// round, the verdict once the windows are over, and the budget holding an ask.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BackgroundJob } from '../../../src/announce/background-job';
import { firstVerdict, type GatewayVerdict } from '../../../src/announce/gateway-verdict';
import type { AttachmentRecord } from '../../../src/announce/state';
import { newCounters, type Counters } from '../../../src/daemon/counters';
import { Jobs } from '../../../src/daemon/jobs';
import { newWork } from '../../../src/daemon/new-work';
import type { Work } from '../../../src/daemon/rounds';
import { parseArp } from '../../../src/wire/arp';
import {
  FakePod,
  gatewayReply,
  jobIn,
  keptLog,
  makeStateDir,
  ScriptedBudget,
  jobRecord,
  writeJob,
  type StateDir,
} from '../../support/daemon-fakes';
import { fakeLibc } from '../../support/fake-libc';
import { fakeJobDeps } from '../../support/fake-job-deps';
import { ManualTimers } from '../../support/manual-timers';

const GW = { interface: 'eth0', gateway: '10.88.0.1' };
/** The fd of FakePod's receiver. */
const RECEIVER = 60;

let state: StateDir;
let pod: FakePod;
let budget: ScriptedBudget;
let timers: ManualTimers;
let counters: Counters;
let closed: number[];
let answers: number[];
let polls: number;
let jobs: Jobs;

beforeEach(() => {
  state = makeStateDir();
  pod = new FakePod();
  pod.arpFrames = [];
  budget = new ScriptedBudget();
  timers = new ManualTimers();
  counters = newCounters();
  closed = [];
  answers = [];
  polls = 0;
  const deps = fakeJobDeps(state, pod, timers, {
    // A receiver says itself when it holds nothing.
    libc: fakeLibc({ pollIn: (fds) => (polls++, fds.map(() => true)) }),
    closeInBackground: (fd) => void closed.push(fd),
    budget: budget.budget,
    observeGatewayAnswer: (seconds) => void answers.push(seconds),
  });
  jobs = new Jobs(deps, counters);
});
afterEach(() => state.remove());

const now = (): number => timers.bootMs();

async function at(ms: number, changed: number[] = []): Promise<void> {
  timers.advance(ms - timers.now());
  await jobs.runDue(now(), new Set(changed));
}

/** A job whose round 1 went out now, with the check on (windows of 200 ms). */
function checked(extra: Partial<BackgroundJob> = {}): BackgroundJob {
  return jobIn(state, { firstRoundAt: now(), gatewayCheck: { windowMs: 200, gateways: [GW] }, ...extra });
}

/** ADD hands over `job` with a pending verdict. */
function added(job: BackgroundJob): string {
  const name = writeJob(state, job);
  jobs.take(name, jobRecord(job), firstVerdict([GW]));
  return name;
}

/** The gateway check's requests among the frames sent (GARPs left out). */
const asked = (): number =>
  pod.sent.filter((f) => {
    const arp = parseArp(f);
    return arp && !arp.senderIp.equals(arp.targetIp);
  }).length;

const recorded = (name: string): AttachmentRecord =>
  JSON.parse(readFileSync(join(state.dir, name), 'utf8')) as AttachmentRecord;
const verdictOf = (): GatewayVerdict | undefined => jobs.status(now())[0]?.gateway;

const NODE_WINDOW_WITH_FIRST_ASK =
  "opens the node-local proof with round 1's first ask, in one visit of the pod; the verdict carries it";

describe('the gateway check in the table of work', () => {
  it('asks right after ADD, once per round, and is final (no-answer) only after the last window', async () => {
    const name = added(checked());
    expect(jobs.wakeAt(now())).toBe(now());
    await at(0);
    expect({ asked: asked(), asks: counters.gateway.asks, requests: counters.gateway.requests }).toEqual({
      asked: 1,
      asks: 1,
      requests: 1,
    });
    expect(jobs.eventFds()).toContain(RECEIVER);
    await at(100);
    expect(polls).toBe(0); // nothing to read while the receiver is quiet and the window open
    await at(199, [RECEIVER]);
    await at(200, [RECEIVER]);
    expect(verdictOf()).toMatchObject({ result: 'pending', asks: 1 });
    expect(closed).toContain(RECEIVER); // with the packet sockets of the pod sessions
    await at(500);
    expect(asked()).toBe(1); // no ask between rounds
    await at(1000); // round 2
    expect(asked()).toBe(2);
    await at(1200, [RECEIVER]);
    await at(3000); // round 3, the last
    expect(asked()).toBe(3);
    await at(3199, [RECEIVER]);
    expect(verdictOf()).toMatchObject({ result: 'pending', asks: 2 });
    expect(jobs.size).toBe(1); // kept alive while the last ask's window is open
    await at(3200, [RECEIVER]);
    expect(jobs.size).toBe(0);
    const verdict = { result: 'no-answer', answered: [], unanswered: [GW], asks: 3 };
    expect(jobs.status(now())).toEqual([
      expect.objectContaining({ roundsSent: 3, gateway: expect.objectContaining(verdict) }),
    ]);
    expect(counters.gateway.noAnswer).toBe(1);
    expect(recorded(name).gateway).toEqual(expect.objectContaining(verdict));
    jobs.forget(name, 'DEL');
    expect(jobs.status(now())).toEqual([]);
  });

  it('is answered once the gateway answered, and asks no more', async () => {
    const name = added(checked());
    pod.arpFrames = [gatewayReply()];
    await at(0);
    await at(7, [RECEIVER]);
    const verdict = { result: 'answered', answered: [{ ...GW, mac: '52:54:00:12:34:56', afterMs: 7 }], asks: 1 };
    expect(verdictOf()).toMatchObject(verdict);
    expect(counters.gateway.answered).toBe(1);
    expect(answers).toEqual([0.007]);
    expect(recorded(name).gateway).toMatchObject(verdict);
    await at(1000);
    expect(jobs.wakeAt(now())).toBeGreaterThan(now()); // no ask planned: nothing due
    await at(3000);
    expect({ asked: asked(), probes: pod.probes, size: jobs.size }).toEqual({ asked: 1, probes: 1, size: 0 });
    expect(jobs.status(now())).toEqual([expect.objectContaining({ gateway: expect.objectContaining(verdict) })]);
  });

  it('keeps a one-round job alive for its ask, then ends it with its verdict kept for status until DEL', async () => {
    const name = added(checked({ schedule: [0] }));
    await at(0);
    expect(asked()).toBe(1);
    await at(100, [RECEIVER]);
    expect(jobs.size).toBe(1);
    await at(200, [RECEIVER]);
    expect(jobs.size).toBe(0);
    expect(jobs.status(now())).toEqual([
      expect.objectContaining({ roundsSent: 1, roundsPlanned: 1, gateway: expect.objectContaining({ asks: 1 }) }),
    ]);
    expect(verdictOf()?.result).toBe('no-answer');
    jobs.forget(name, 'DEL');
    expect(jobs.status(now())).toEqual([]);
  });

  it(NODE_WINDOW_WITH_FIRST_ASK, async () => {
    const name = added(checked());
    pod.arpFrames = [gatewayReply()];
    await at(0);
    // FakePod's veth has no bridge port on the host: the node cannot see the segment, said at once.
    expect(verdictOf()?.node).toEqual([
      { interface: 'eth0', unseen: expect.stringContaining('cannot see the segment') },
    ]);
    expect(pod.opened).toBe(1); // the node window and the ask entered the pod once
    expect(pod.open).toBe(0); // and that visit ends with the turn
    await at(5, [RECEIVER]);
    expect(recorded(name).gateway).toMatchObject({ result: 'answered', node: verdictOf()?.node });
  });

  it('a round that falls due while a window is open asks once that window closes, and is not the last', async () => {
    added(checked({ schedule: [0, 100] })); // round 2 inside the first 200 ms window
    await at(0);
    await at(100); // round 2
    expect(asked()).toBe(1);
    await at(200, [RECEIVER]);
    expect(verdictOf()).toMatchObject({ result: 'pending', asks: 1 });
    await at(201);
    expect(asked()).toBe(2);
    await at(401, [RECEIVER]);
    expect(verdictOf()).toMatchObject({ result: 'no-answer', asks: 2 });
  });

  const replacedTitle =
    'a recovered job without rounds left asks at once, but never from a pod that came after it (the netns path ' +
    'names another netns): it enters nothing, and its verdict is no-answer';
  it(replacedTitle, async () => {
    writeJob(state, checked({ firstRoundAt: now() - 5000, schedule: [0] }));
    writeFileSync(`${state.netns}.new`, '');
    renameSync(`${state.netns}.new`, state.netns); // another netns at the path
    jobs.recover(new Map());
    await at(0);
    expect({ asked: asked(), opened: pod.opened, size: jobs.size }).toEqual({ asked: 0, opened: 0, size: 0 });
    expect(verdictOf()).toMatchObject({ result: 'no-answer', asks: 0 });
  });

  it('an ask the budget holds back waits for its tokens', async () => {
    budget.answers.push(300);
    added(checked());
    await at(0);
    expect({ asked: asked(), frames: budget.calls[0]?.frames }).toEqual({ asked: 0, frames: 1 });
    expect(jobs.wakeAt(now())).toBe(now() + 300);
    await at(299);
    expect(asked()).toBe(0);
    await at(300);
    expect(asked()).toBe(1);
  });
});

describe('newWork: when the check asks first', () => {
  const log = keptLog().log;
  const workOf = (how: 'added' | 'recovered', job: BackgroundJob): Work =>
    newWork(
      { name: 'c1@eth0.json', job, originalMacs: [], log },
      { how, verdict: undefined, from: 1 },
      now(),
      counters,
    )!;

  it('an added job with a pending verdict asks at once, and opens the node window', () => {
    expect(workOf('added', checked()).gateway).toEqual({
      verdict: firstVerdict([GW]),
      askAt: now(),
      nodeAt: now(),
    });
  });

  it('a recovered job with rounds left asks after its next round; without rounds left, at once', () => {
    expect(workOf('recovered', checked()).gateway).toEqual({ verdict: firstVerdict([GW]) });
    expect(workOf('recovered', checked({ schedule: [0] })).gateway).toEqual({
      verdict: firstVerdict([GW]),
      askAt: now(),
    });
  });

  it('a job without the check has no gateway work', () => {
    expect(workOf('added', jobIn(state, { firstRoundAt: now() })).gateway).toBeUndefined();
  });
});
