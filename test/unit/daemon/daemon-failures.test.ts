// The announcer's loop lives on whatever throws: every failure is counted and
// logged, cleanup never throws, a close koffi refuses runs on this thread, and
// the metrics file is written at most once a second, only when it changed.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fakeLibc } from '../../support/fake-libc';
import { jobRecord, link, writeJob } from '../../support/daemon-fakes';
import { countersOf, DaemonLoop } from '../../support/daemon-loop';

let d: DaemonLoop;
beforeEach(() => {
  d = new DaemonLoop();
});
afterEach(() => d.state.remove());

describe('runDaemon: failures', () => {
  const throwOnEveryTitle =
    'a throw on every path is counted, logged, and the loop lives on: poll, a round, ' +
    'a hand-off, a command, metrics, a background close';
  it(throwOnEveryTitle, async () => {
    d.deps.settings.metricsFile = '/m.prom';
    writeJob(d.state, d.sentAt(0, { schedule: [0, 100, 200, 300] }));
    d.poll.error = new Error('poll broke');
    d.budget.answers.push(new Error('bucket broke'));
    let jobLogCalls = 0;
    const jobLog = d.deps.jobLog;
    d.deps.jobLog = (job) => {
      if (++jobLogCalls === 2) throw new Error('log broke');
      return jobLog(job);
    };
    const c2 = d.sentAt(0, { containerId: 'c2', schedule: [0, 5000] });
    let runs = 0;
    d.runner = async (_env, _stdin, host) => {
      if (++runs > 1) throw new Error('runner broke');
      writeJob(d.state, c2); // a hosted ADD writes its record, then hands its job over: taking it throws
      host
        .jobHost(d.timers.bootMs())
        .added('c2@eth0.json', jobRecord(c2), { sent: { garpRequest: 0, garpReply: 0, na: 0 } });
      return { exit: 0, stdout: '' };
    };
    const hosted = d.cniAt(50);
    const command = d.cniAt(60);
    let metricWrites = 0;
    d.deps.writeMetrics = () => {
      if (++metricWrites === 1) throw new Error('disk full');
    };
    d.deps.closeInBackground = (fd, done) => queueMicrotask(() => done(new Error(`close ${fd} broke`)));
    d.pod.links = [link()];
    const status = d.controlAt(350, { op: 'status' });
    await d.run();
    expect(hosted.client!.lines()).toEqual([{ ack: true }, { exit: 0, stdout: '' }]);
    expect({ lines: command.client!.lines(), ended: command.client!.ended }).toEqual({
      lines: [{ ack: true }],
      ended: true,
    });
    expect(countersOf(status).errors).toBeGreaterThanOrEqual(6); // poll, round, hand-off, command, metrics, closes
    // Rounds 3 and 4 of c1 (round 2 failed). c2's failed hand-off leaves its job in its record, for the next announcer
    // to take up: this one exits idle without reading the records again (it is their only writer).
    expect(d.pod.sent.length).toBe(2);
    expect(d.logged('how=recovered')).toHaveLength(1);
    const errors = d.lines.filter((l) => l.includes('ERROR') || l.includes('WARN'));
    for (const what of [
      'turn failed',
      'bucket broke',
      'cannot take a job',
      'CNI command failed outside dispatch',
      'disk full',
      'cannot close a socket',
    ]) {
      expect([what, errors.some((l) => l.includes(what))]).toEqual([what, true]);
    }
    expect(d.lines.at(-1)).toContain('announcer stopped');
  });

  it('cleanup never throws: sockets that fail to close are counted', async () => {
    d.deps.settings.idleExitMs = 100;
    d.controlAt(0, { op: 'status' });
    writeJob(d.state, d.sentAt(0, { firstRoundAt: undefined, readyDeadline: d.timers.bootMs() + 100_000 }));
    d.pod.links = [link({ up: false })];
    d.sockets.closeError = new Error('EIO');
    const listeners = process.listenerCount('SIGTERM');
    d.signalAt(600, 'SIGTERM');
    await expect(d.run()).resolves.toBeUndefined();
    expect(d.logged('cannot close a control socket').length).toBeGreaterThan(0);
    expect(d.pod.open).toBe(0); // the deferred wait's session
    expect(process.listenerCount('SIGTERM')).toBe(listeners);
  });

  it('a close koffi refuses runs on this thread, counted', async () => {
    writeJob(d.state, d.sentAt(0, { schedule: [0, 100] }));
    const closedNow: number[] = [];
    d.deps.libc = fakeLibc({ pollInOut: d.poll.pollInOut, close: (fd) => void closedNow.push(fd) });
    d.deps.closeInBackground = () => {
      throw new Error('too many async calls');
    };
    const status = d.controlAt(200, { op: 'status' });
    await d.run();
    expect(closedNow).toEqual(d.pod.released);
    expect(closedNow.length).toBeGreaterThan(0);
    expect(countersOf(status).errors).toBe(1);
  });

  it('writes metrics once a second at most, only when they changed, and once more on exit', async () => {
    d.deps.settings.metricsFile = '/m.prom';
    writeJob(d.state, d.sentAt(0, { schedule: [0, 1100, 1200, 1300] }));
    d.signalAt(1300, 'SIGTERM');
    await d.run();
    expect(d.metrics.map((m) => /rounds_total\{outcome="sent"\} (\d+)/.exec(m.text)![1])).toEqual(['1', '3']);
  });

  it('never writes the same metrics twice', async () => {
    Object.assign(d.deps.settings, { idleExitMs: 3000, metricsFile: '/m.prom' });
    writeJob(d.state, d.sentAt(0, { schedule: [0, 100, 200, 2500] }));
    await d.run();
    expect(d.metrics.length).toBeGreaterThanOrEqual(2);
    expect(d.metrics.at(-1)!.text).toContain('cni_announcer_rounds_total{outcome="sent"} 3');
    expect(new Set(d.metrics.map((m) => m.text)).size).toBe(d.metrics.length);
  });
});
