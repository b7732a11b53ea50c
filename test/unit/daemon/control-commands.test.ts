// CNI commands on the announcer's socket, over in-memory sockets and a runner
// whose promises the test settles: `ack` at once, a `beat` every BEAT_MS, the
// end and the close; a request its sender gave up on never runs; a client
// that leaves mid-command is let go; a large end goes out in pieces.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACTED_MS } from '../../../src/daemon/control';
import { ACK_MARGIN_MS, BEAT_MS, STOP_MS, type WireReply } from '../../../src/shim/wire';
import { ControlFixture } from '../../support/control-fixture';
import { settle } from '../../support/manual-timers';
import { cniLine } from '../../support/wire-client';

let f: ControlFixture;
beforeEach(() => {
  f = new ControlFixture();
  f.control.listen();
});
afterEach(() => f.state.remove());

const ENV = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c1' };
const add = (ackBy = f.timers.bootMs() + 5000, build = 'b1'): string =>
  cniLine(ENV, '{"cniVersion":"1.0.0"}', ackBy, build);
const beat: WireReply = { beat: true };

describe('ControlSocket: CNI commands', () => {
  it('acks at once, beats every BEAT_MS while the command runs, then writes its end and closes', async () => {
    const c = f.client(add()).read();
    expect(f.runs.map(({ env, stdin, build }) => ({ env, stdin, build }))).toEqual([
      { env: ENV, stdin: '{"cniVersion":"1.0.0"}', build: 'b1' },
    ]);
    expect(c.lines()).toEqual([{ ack: true }]);
    expect({ busy: f.control.busy, wakeAt: f.control.wakeAt() }).toEqual({
      busy: true,
      wakeAt: f.timers.bootMs() + BEAT_MS,
    });
    f.timers.advance(BEAT_MS - 1);
    f.turn();
    expect(c.read().lines()).toHaveLength(1);
    f.timers.advance(1);
    f.turn();
    f.turn(); // not due again at once
    expect(c.read().lines()).toEqual([{ ack: true }, beat]);
    expect(f.control.wakeAt()).toBe(f.timers.bootMs() + BEAT_MS);
    f.timers.advance(BEAT_MS);
    f.turn();
    expect(c.read().lines()).toEqual([{ ack: true }, beat, beat]);
    f.runs[0]!.end({ exit: 0, stdout: '{"ips":[]}' });
    await settle();
    expect(c.read().lines()).toEqual([{ ack: true }, beat, beat, { exit: 0, stdout: '{"ips":[]}' }]);
    expect({ ended: c.ended, busy: f.control.busy, wakeAt: f.control.wakeAt() }).toEqual({
      ended: true,
      busy: false,
      wakeAt: Infinity,
    });
  });

  const dropsUnreadCommandTitle =
    'drops unread a command whose sender no longer waits for the ack (ACK_MARGIN_MS before its ackBy, on ' +
    'CLOCK_BOOTTIME), and never runs it; a late control request is still served';
  it(dropsUnreadCommandTitle, () => {
    f.timers.advance(1000);
    const boot = f.timers.bootMs();
    const late = f.client(add(boot + ACK_MARGIN_MS - 1)).read();
    expect({ lines: late.lines(), ended: late.ended, runs: f.runs.length }).toEqual({
      lines: [],
      ended: true,
      runs: 0,
    });
    expect(f.logged('dropped a command its sender no longer waits for')).toHaveLength(1);
    const lateControl = f
      .client(
        cniLine(ENV, '{}', boot - 1).replace(
          '"cni":{"env":{"CNI_COMMAND":"ADD","CNI_CONTAINERID":"c1"},"stdin":"{}"}',
          '"control":{"op":"status"}',
        ),
      )
      .read();
    expect({ lines: lateControl.lines().length, handled: f.handled }).toEqual({
      lines: 1,
      handled: [{ op: 'status' }],
    });
    // ACK_MARGIN_MS before ackBy, on the dot, it is still taken.
    expect(
      f
        .client(add(boot + ACK_MARGIN_MS))
        .read()
        .lines(),
    ).toEqual([{ ack: true }]);
    expect(f.runs).toHaveLength(1);
  });

  const doesNotPollTitle =
    "does not poll a running command's connection for input (its EOF would keep poll(2) awake), nor a closing one";
  it(doesNotPollTitle, async () => {
    const c = f.client(add());
    expect(f.control.fds()).toEqual([f.control.fds()[0]]); // the listener alone
    c.send('trailing bytes\n');
    expect(f.control.fds()).not.toContain(c.fd + 1);
    f.sockets.room = 10;
    f.runs[0]!.end({ exit: 0, stdout: 'x'.repeat(20) });
    await settle();
    expect(f.control.writeFds()).toEqual([c.fd + 1]);
    expect(f.control.fds()).not.toContain(c.fd + 1);
  });

  const clientThatLeavesTitle =
    'a client that leaves while its command runs is dropped at the next beat (EPIPE), quietly; the end finds no one';
  it(clientThatLeavesTitle, async () => {
    const c = f.client(add());
    c.close();
    f.timers.advance(BEAT_MS);
    expect(() => f.turn()).not.toThrow();
    expect({ busy: f.control.busy, failures: f.failures }).toEqual({ busy: false, failures: [] });
    expect(f.logged('DEBUG client left before its reply')).toHaveLength(1);
    f.runs[0]!.end({ exit: 0, stdout: '{}' });
    await settle();
    f.turn();
    expect({ busy: f.control.busy, failures: f.failures }).toEqual({ busy: false, failures: [] });
  });

  it('writes an end larger than the socket takes at once in pieces, as poll(2) reports room, then closes', async () => {
    const c = f.client(add()).read();
    const stdout = 'y'.repeat(5000);
    f.sockets.room = 1000;
    f.runs[0]!.end({ exit: 0, stdout });
    await settle();
    expect(f.control.writeFds()).toEqual([c.fd + 1]);
    f.turn(); // the client has not read: no room, nothing moves
    expect(f.control.writeFds()).toEqual([c.fd + 1]);
    let pieces = 0;
    while (!c.ended && pieces < 20) {
      if (f.sockets.pending(c.fd)) pieces++;
      c.read();
      f.turn();
    }
    expect(pieces).toBe(6); // 1000 bytes at a time: the reply line is 5018 bytes
    expect(c.lines()).toEqual([{ ack: true }, { exit: 0, stdout }]);
    expect({ busy: f.control.busy, writeFds: f.control.writeFds() }).toEqual({ busy: false, writeFds: [] });
  });

  const dropsClientThatTitle =
    'drops a client that reads none of its end for CLIENT_MS (a stopped ' +
    'shim would keep the announcer busy for ever)';
  it(dropsClientThatTitle, async () => {
    const c = f.client(add());
    f.sockets.room = 10;
    f.runs[0]!.end({ exit: 0, stdout: 'z'.repeat(100) });
    await settle();
    expect(f.control.wakeAt()).toBe(f.timers.bootMs() + 1000);
    f.timers.advance(999);
    f.turn();
    expect(f.control.busy).toBe(true);
    f.timers.advance(1);
    f.turn();
    expect({ busy: f.control.busy, ended: c.read().ended, wakeAt: f.control.wakeAt() }).toEqual({
      busy: false,
      ended: true,
      wakeAt: Infinity,
    });
  });

  it('answers a command the announcer refuses with {"refused": why} and closes', () => {
    f.refuse = 'handover';
    const c = f.client(add()).read();
    expect({ lines: c.lines(), ended: c.ended, busy: f.control.busy }).toEqual({
      lines: [{ refused: 'handover' }],
      ended: true,
      busy: false,
    });
  });

  const runnerThatRejectsTitle =
    'a runner that rejects (a bug: dispatch never does) is reported, and its client dropped without an end';
  it(runnerThatRejectsTitle, async () => {
    const c = f.client(add()).read();
    f.runs[0]!.fail(new Error('runner broke'));
    await settle();
    expect({ lines: c.read().lines(), ended: c.ended, busy: f.control.busy }).toEqual({
      lines: [{ ack: true }],
      ended: true,
      busy: false,
    });
    expect(f.failures.map(([what, err]) => [what, (err as Error).message])).toEqual([
      ['CNI command failed outside dispatch', 'runner broke'],
    ]);
  });

  it('runs commands side by side: each has its own beats and its own end', async () => {
    const [a, b] = [f.client(add()), f.client(add())];
    f.timers.advance(BEAT_MS);
    f.turn();
    f.runs[1]!.end({ exit: 1, stdout: 'b' });
    await settle();
    f.timers.advance(BEAT_MS);
    f.turn();
    expect(b.read().lines()).toEqual([{ ack: true }, beat, { exit: 1, stdout: 'b' }]);
    expect(a.read().lines()).toEqual([{ ack: true }, beat, beat]);
    expect(f.control.busy).toBe(true);
  });
});

/** A request line of this build's shim: it waits for the end until `deadline`, and sends ackBy = deadline. */
const withDeadline = (command: string, deadline: number): string =>
  cniLine({ ...ENV, CNI_COMMAND: command }, '{"cniVersion":"1.0.0"}', deadline).replace(
    '"cni":',
    `"deadline":${deadline},"cni":`,
  );

describe('ControlSocket: requests with a deadline', () => {
  it('writes no ack and no beat, only the end', async () => {
    const c = f.client(withDeadline('ADD', f.timers.bootMs() + 5000)).read();
    expect(f.runs).toHaveLength(1);
    f.timers.advance(BEAT_MS * 3);
    f.turn();
    expect(c.read().lines()).toEqual([]);
    expect(f.control.wakeAt()).toBe(Infinity);
    f.runs[0]!.end({ exit: 0, stdout: 'ok' });
    await settle();
    expect(c.read().lines()).toEqual([{ exit: 0, stdout: 'ok' }]);
  });

  it('drops an ADD or CHECK read at or past its deadline unrun; runs a DEL, GC or STATUS however late', () => {
    const boot = f.timers.bootMs();
    for (const command of ['ADD', 'CHECK']) expect(f.client(withDeadline(command, boot)).read().ended).toBe(true);
    expect(f.runs).toHaveLength(0);
    for (const command of ['DEL', 'GC', 'STATUS']) f.client(withDeadline(command, boot - 10_000)).read();
    expect(f.runs.map((r) => r.env.CNI_COMMAND)).toEqual(['DEL', 'GC', 'STATUS']);
  });

  const tellsRunningADDTitle =
    "tells a running ADD it is no longer wanted once its deadline passes or its client has gone; DEL's always is";
  it(tellsRunningADDTitle, () => {
    const boot = f.timers.bootMs();
    f.client(withDeadline('ADD', boot + 1000)).read();
    const leaving = f.client(withDeadline('ADD', boot + 5000)).read();
    f.client(withDeadline('DEL', boot + 1000)).read();
    const [timed, gone, del] = f.runs;
    expect([timed!.gate.stopReason(), gone!.gate.stopReason(), del!.gate.stopReason()]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    leaving.close();
    f.timers.advance(1000);
    expect([timed!.gate.stopReason(), gone!.gate.stopReason(), del!.gate.stopReason()]).toEqual([
      'the caller no longer waits',
      'the caller no longer waits',
      undefined,
    ]);
  });

  const stopPassesOnTitle =
    'at the stop, a running command that has not acted is refused with handover at once (its own end is no ' +
    "one's); one that has acted runs on and answers; one still running ACTED_MS on is stopped and answers, by STOP_MS";
  it(stopPassesOnTitle, async () => {
    const boot = f.timers.bootMs();
    const [idle, acted, slow] = ['ADD', 'ADD', 'DEL'].map((c) => f.client(withDeadline(c, boot + 9000)).read());
    const [idleRun, actedRun, slowRun] = f.runs;
    actedRun!.gate.acting();
    slowRun!.gate.acting();
    f.control.stop();
    expect(idle!.read().lines()).toEqual([{ refused: 'handover' }]);
    expect(idleRun!.gate.stopReason()).toMatch(/stops: passed on$/);
    expect([actedRun!.gate.stopReason(), slowRun!.gate.stopReason()]).toEqual([undefined, undefined]);
    idleRun!.end({ exit: 0, stdout: 'late' }); // its end is dropped: the next announcer ran it
    actedRun!.end({ exit: 0, stdout: 'ok' });
    await settle();
    f.turn();
    expect(idle!.read().lines()).toEqual([{ refused: 'handover' }]);
    expect(acted!.read().lines()).toEqual([{ exit: 0, stdout: 'ok' }]);
    expect(f.control.wakeAt()).toBe(boot + ACTED_MS);
    f.timers.advance(ACTED_MS);
    f.turn();
    expect(slowRun!.gate.stopReason()).toMatch(/^the announcer \(pid \d+\) stops$/);
    expect(f.control.done()).toBe(false);
    slowRun!.end({ exit: 1, stdout: 'stopped' });
    await settle();
    f.turn();
    expect(slow!.read().lines()).toEqual([{ exit: 1, stdout: 'stopped' }]);
    expect({ done: f.control.done(), served: f.served, passedOn: f.control.passedOn() }).toEqual({
      done: true,
      served: ['ADD', 'DEL'],
      passedOn: 1,
    });
    expect(f.timers.bootMs() - boot).toBeLessThan(STOP_MS);
  });
});
