// One way to wait: the announcer's loop runs with every timer global and
// every injected sleep stubbed to THROW. Rounds held back by the in-memory
// budget, a hosted command's sleep, a back-off after a failed turn and the
// status answers all go through the loop's one poll(2) and its deadlines.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { NodeFrameBudget } from '../../../src/announce/budget';
import { ROUNDS_PER_TURN } from '../../../src/daemon/jobs';
import { writeJob } from '../../support/daemon-fakes';
import { answerOf, countersOf, DaemonLoop } from '../../support/daemon-loop';

const thrower = (name: string) => () => {
  throw new Error(`${name} called: the announcer's waits go through its poll`);
};

let d: DaemonLoop;
beforeEach(() => {
  d = new DaemonLoop();
  for (const name of ['setTimeout', 'setInterval']) vi.stubGlobal(name, thrower(name));
  d.timers.sleep = thrower('Timers.sleep');
  d.timers.setTimeout = thrower('ManualTimers.setTimeout');
});
afterEach(() => {
  vi.unstubAllGlobals();
  d.state.remove();
});

describe('runDaemon with timer stubs that throw', () => {
  const boundedWorkPerTitle =
    'bounded work per turn: of five rounds due at once, at most ROUNDS_PER_TURN enter their pods before it polls';
  it(boundedWorkPerTitle, async () => {
    d.deps.settings.idleExitMs = 300;
    for (const id of ['c1', 'c2', 'c3', 'c4', 'c5'])
      writeJob(d.state, d.sentAt(0, { containerId: id, schedule: [0, 1000] }));
    const openedAtPoll: number[] = [];
    const onPoll = d.poll.onPoll;
    d.poll.onPoll = () => (openedAtPoll.push(d.pod.opened), onPoll());
    await d.run();
    expect(d.pod.sent).toHaveLength(5);
    const steps = openedAtPoll.slice(1).map((n, i) => n - openedAtPoll[i]!);
    expect(Math.max(...steps)).toBe(ROUNDS_PER_TURN);
    // The polls between are not waits: the rest was still due.
    const atDue = d.poll.calls.filter((c) => c.at === 1000 && c.timeoutMs === 0);
    expect(atDue).toHaveLength(Math.ceil(5 / ROUNDS_PER_TURN) - 1);
  });

  const holdsRoundsBackTitle =
    'holds rounds back in the in-memory budget, sleeps a command on the loop, backs off in its poll, answers status';
  it(holdsRoundsBackTitle, async () => {
    const limit = { framesPerSecond: 1, burst: 1 };
    const node = new NodeFrameBudget(() => limit);
    d.deps.budget = () => node.budget('later');
    // Three pods whose rounds 2 and 3 fall due at once: one frame a second lets one round through at a time.
    d.deps.settings.idleExitMs = 500;
    for (const id of ['c1', 'c2', 'c3']) writeJob(d.state, d.sentAt(0, { containerId: id, schedule: [0, 1000, 3000] }));
    let slept = -1;
    d.runner = async (_env, _stdin, host) => {
      const from = d.timers.now();
      await host.waits.sleep(250);
      slept = d.timers.now() - from;
      return { exit: 0, stdout: '{}' };
    };
    const add = d.cniAt(200);
    d.poll.at(700, () => void (d.poll.error = new Error('poll broke')));
    const statuses = Array.from({ length: 160 }, (_, i) => d.controlAt(50 * i, { op: 'status' }));
    await d.run();

    expect(slept).toBeGreaterThanOrEqual(250);
    expect(add.client!.replies.at(-1)!.reply).toEqual({ exit: 0, stdout: '{}' });
    // The back-off after the failed turn is the loop's poll with nothing to read, for PAUSE_AFTER_ERROR_MS.
    expect(d.poll.calls.some((c) => c.read.length === 0 && c.write.length === 0 && c.timeoutMs === 100)).toBe(true);
    expect(d.logged('announcer turn failed')).toHaveLength(1);
    // Every status is answered within a turn of its asking (the loop never waits elsewhere).
    statuses.forEach((s, i) => {
      expect(answerOf(s)).toMatchObject({ ok: true });
      expect(s.client!.replies[0]!.at - 50 * i).toBeLessThanOrEqual(100);
    });
    // Per pod, 2 later rounds planned: each went out or was dropped, and the budget held some back.
    const last = countersOf(statuses.at(-1)!);
    expect(d.pod.sent.length + last.rateLimited.dropped).toBe(3 * 2);
    expect(last.rateLimited.delayed).toBeGreaterThan(0);
  });
});
