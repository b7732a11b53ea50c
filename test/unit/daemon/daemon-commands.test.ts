// CNI commands through the announcer's whole loop: a command's wait is
// settled by the loop's one poll(2) while other requests and rounds go on;
// commands of another stateDir are refused; a running command's connection
// never keeps the poll awake.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BEAT_MS } from '../../../src/shim/wire';
import { writeJob } from '../../support/daemon-fakes';
import { answerOf, DaemonLoop } from '../../support/daemon-loop';

let d: DaemonLoop;
beforeEach(() => {
  d = new DaemonLoop();
  d.deps.settings.idleExitMs = 300;
  d.controlAt(0, { op: 'status' });
});
afterEach(() => d.state.remove());

const EVENT_FD = 77;

describe('runDaemon: CNI commands', () => {
  const commandWaitingOnTitle =
    "a command waiting on an fd resumes when the loop's poll finds it " +
    'readable; a status request is answered meanwhile';
  it(commandWaitingOnTitle, async () => {
    const order: string[] = [];
    d.runner = async (env, _stdin, host) => {
      order.push(`${env.CNI_COMMAND} waits`);
      await host.waits.readable([EVENT_FD], 5000);
      order.push(`resumed at ${d.timers.now()}`);
      return { exit: 0, stdout: '{"cniVersion":"1.0.0"}' };
    };
    const add = d.cniAt(10);
    const status = d.controlAt(150, { op: 'status' });
    d.poll.at(150, () => void order.push('status asked'));
    d.poll.at(420, () => void d.poll.ready.add(EVENT_FD));
    await d.run();
    expect(order).toEqual(['ADD waits', 'status asked', 'resumed at 420']);
    expect(answerOf(status)).toMatchObject({ ok: true });
    expect(status.client!.replies[0]!.at).toBeLessThan(420);
    const replies = add.client!.replies;
    expect(replies.map((r) => r.reply)).toEqual([
      { ack: true },
      { beat: true },
      { beat: true },
      { beat: true },
      { beat: true },
      { exit: 0, stdout: '{"cniVersion":"1.0.0"}' },
    ]);
    expect(replies[0]!.at).toBe(10);
    expect(replies.at(-1)!.at).toBe(420);
    // The beats come BEAT_MS apart: the loop's poll wakes for them.
    expect(replies.slice(1, 5).map((r) => r.at)).toEqual([110, 210, 310, 410]);
    expect(
      d.poll.calls
        .filter((c) => c.at > 10 && c.at < 420)
        .every((c) => c.read.includes(EVENT_FD) && c.timeoutMs <= BEAT_MS),
    ).toBe(true);
  });

  const commandSleepingOnTitle =
    'a command sleeping on the loop (host.waits.sleep) ends at its time, while a round goes out at its own';
  it(commandSleepingOnTitle, async () => {
    d.deps.settings.idleExitMs = 300;
    writeJob(d.state, d.sentAt(-900, { schedule: [0, 1000] })); // round 2 due at 100
    let roundsBefore = -1;
    d.runner = async (_env, _stdin, host) => {
      await host.waits.sleep(250);
      roundsBefore = d.pod.sent.length;
      return { exit: 0, stdout: '' };
    };
    const add = d.cniAt(0);
    await d.run();
    expect(roundsBefore).toBe(1);
    expect(add.client!.replies.at(-1)).toEqual({ at: 250, reply: { exit: 0, stdout: '' } });
  });

  it('refuses a command of another stateDir, or whose stdin names none, and never runs it', async () => {
    const other = d.cniAt(10, 'b1', d.stdin('/run/elsewhere'));
    const garbled = d.cniAt(20, 'b1', 'not json');
    await d.run();
    expect(other.client!.lines()).toEqual([{ refused: 'another stateDir' }]);
    expect(garbled.client!.lines()).toEqual([{ refused: 'another stateDir' }]);
    expect(d.commands).toEqual([]);
  });

  it('counts the CNI commands it takes to run in its status, and not the ones it refuses', async () => {
    d.runner = async () => ({ exit: 0, stdout: '' });
    d.cniAt(10);
    d.cniAt(20);
    d.cniAt(30, 'b1', d.stdin('/run/elsewhere'));
    const status = d.controlAt(40, { op: 'status' });
    await d.run();
    const served = (answerOf(status) as { status: { counters: { served: object } } }).status.counters.served;
    expect(served).toEqual({ ADD: 2, DEL: 0, CHECK: 0, GC: 0, STATUS: 0 });
  });

  const neverPollsRunningTitle =
    "never polls a running command's connection for input: bytes or an EOF " +
    'left on it would keep poll(2) from sleeping';
  it(neverPollsRunningTitle, async () => {
    const add = d.cniAt(10);
    d.poll.at(10, () => void add.client!.send('more bytes the announcer never reads\n'));
    d.poll.at(1000, () => d.commands[0]!.end({ exit: 0, stdout: '' }));
    await d.run();
    expect(add.client!.lines().at(-1)).toEqual({ exit: 0, stdout: '' });
    expect(d.poll.spun).toBe(false);
    const serverEnd = add.client!.fd + 1;
    // Its request line was read as it was accepted (it came with the connection): no poll ever had its socket.
    expect(d.poll.calls.filter((c) => c.read.includes(serverEnd))).toHaveLength(0);
    // Between the ack and the end the loop slept: one poll per beat or so, not thousands.
    expect(d.poll.calls.filter((c) => c.at > 10 && c.at < 1000).length).toBeLessThan(30);
  });
});
