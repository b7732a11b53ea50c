// The gateway check's answer times (gateway-work.ts's settle): with two
// routed gateways answering in different windows, each answer is observed
// once, timed from round 1, and the verdict keeps the first window's answer.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { firstVerdict } from '../../../src/announce/gateway-verdict';
import { newCounters, type Counters } from '../../../src/daemon/counters';
import { Jobs } from '../../../src/daemon/jobs';
import { parseIPv4 } from '../../../src/wire/ip';
import {
  FakePod,
  gatewayReply,
  jobIn,
  makeStateDir,
  POD_MAC,
  jobRecord,
  writeJob,
  type StateDir,
} from '../../support/daemon-fakes';
import { fakeJobDeps } from '../../support/fake-job-deps';
import { ManualTimers } from '../../support/manual-timers';

const GWS = [
  { interface: 'eth0', gateway: '10.88.0.1' },
  { interface: 'eth0', gateway: '10.88.0.254' },
];
const OTHER_MAC = Buffer.from('525400abcdef', 'hex');
const RECEIVER = 60;

let state: StateDir;
let pod: FakePod;
let timers: ManualTimers;
let answers: number[];
let counters: Counters;
let jobs: Jobs;

beforeEach(() => {
  state = makeStateDir();
  pod = new FakePod();
  pod.arpFrames = [];
  timers = new ManualTimers();
  answers = [];
  counters = newCounters();
  jobs = new Jobs(
    fakeJobDeps(state, pod, timers, { observeGatewayAnswer: (seconds) => void answers.push(seconds) }),
    counters,
  );
});
afterEach(() => state.remove());

async function at(ms: number, changed: number[] = []): Promise<void> {
  timers.advance(ms - timers.now());
  await jobs.runDue(timers.bootMs(), new Set(changed));
}

/** The second gateway's ARP reply to the pod. */
const otherReply = (): Buffer =>
  Buffer.concat([
    POD_MAC,
    OTHER_MAC,
    Buffer.from('08060001080006040002', 'hex'),
    OTHER_MAC,
    parseIPv4('10.88.0.254'),
    POD_MAC,
    parseIPv4('10.88.0.5'),
  ]);

describe('two gateways answering in different windows', () => {
  it('observes each answer once, timed from round 1', async () => {
    const job = jobIn(state, { firstRoundAt: timers.bootMs(), gatewayCheck: { windowMs: 200, gateways: GWS } });
    jobs.take(writeJob(state, job), jobRecord(job), firstVerdict(GWS));
    pod.arpFrames = [gatewayReply()];
    await at(0);
    await at(7, [RECEIVER]);
    await at(200, [RECEIVER]);
    expect(answers).toEqual([0.007]);
    pod.arpFrames = [otherReply()];
    await at(1000); // round 2 asks the one left
    await at(1010, [RECEIVER]);
    expect(answers).toEqual([0.007, 1.01]);
    expect(jobs.status(timers.bootMs())[0]?.gateway).toMatchObject({
      result: 'answered',
      answered: [
        { gateway: '10.88.0.1', afterMs: 7 },
        { gateway: '10.88.0.254', afterMs: 1010 },
      ],
      unanswered: [],
      asks: 2,
    });
  });
});

describe('a gateway check that throws', () => {
  it('is counted, and the rounds keep their schedule (it is no failed round)', async () => {
    pod.arpFrames = undefined; // the ask cannot open its receivers: it throws
    const job = jobIn(state, { firstRoundAt: timers.bootMs(), gatewayCheck: { windowMs: 200, gateways: GWS } });
    jobs.take(writeJob(state, job), jobRecord(job), firstVerdict(GWS));
    await at(0);
    expect(counters.errors).toBe(1);
    expect(pod.sent).toEqual([]);
    await at(1000);
    expect(pod.sent).toHaveLength(1); // round 2, on time
    expect(jobs.status(timers.bootMs())[0]).toMatchObject({ roundsSent: 2, nextRoundInMs: 2000 });
  });
});
