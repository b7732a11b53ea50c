// The announcer's loop with --listen, through fakes (test/support/daemon-loop.ts):
// /healthz and /metrics answered by the loop itself, 503 while it hands over,
// no extra wake-up of the idle loop, a bind that fails ends it before it
// listens; and the ADD-to-round-1 histogram from the commands it hosts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HttpListenError } from '../../../src/daemon/http-server';
import { parseListenAddress } from '../../../src/sys/tcp-socket';
import { DaemonLoop } from '../../support/daemon-loop';
import { fakeTcp, HttpClient, PICKED_PORT } from '../../support/fake-tcp';
import { attachmentRecord } from '../../support/records';

// The registry loads on first use (lazy-metrics.ts): loaded here once, its import resolves within a turn of the
// fake loop, whose clock moves without waiting for the real time a first import takes.
await import('../../../src/daemon/metrics');

let d: DaemonLoop;
beforeEach(() => {
  d = new DaemonLoop();
});
afterEach(() => d.state.remove());

/** --listen=127.0.0.1:0 on the loop's fake sockets. */
function listen(loop: DaemonLoop): void {
  loop.deps.http = { address: parseListenAddress('127.0.0.1:0'), sockets: fakeTcp(loop.sockets) };
}

/** At `at` ms, a GET of `path`; the client reads each turn. */
function getAt(at: number, path: string): { client?: HttpClient } {
  const slot: { client?: HttpClient } = {};
  d.poll.at(
    at,
    () => void (slot.client = new HttpClient(d.sockets, PICKED_PORT, `GET ${path} HTTP/1.1\r\nHost: n\r\n\r\n`)),
  );
  const before = d.poll.onPoll;
  d.poll.onPoll = () => {
    before();
    slot.client?.read();
  };
  return slot;
}

const FRAMES = { garpRequest: 1, garpReply: 0, na: 1 };
/** The record of an ADD that left nothing for the background. */
const NO_JOB = attachmentRecord({
  network: 'net',
  containerId: 'c1',
  netns: '/var/run/netns/p',
  netnsId: { dev: 4, ino: 9 },
  originalMacs: [],
});

/** At `at` ms, a hosted ADD whose round 1 sent FRAMES and left no job. */
function reportAt(loop: DaemonLoop, at: number): void {
  loop.runner = async (_env, _stdin, host) => {
    host.jobHost(loop.timers.bootMs()).added('c1@eth0.json', NO_JOB, { sent: FRAMES });
    return { exit: 0, stdout: '' };
  };
  loop.cniAt(at);
}

describe('runDaemon with --listen', () => {
  const answersHealthzAndTitle =
    'answers /healthz and /metrics from its loop, in the turn the request ' +
    'came in, and closes the endpoint when it stops';
  it(answersHealthzAndTitle, async () => {
    listen(d);
    d.deps.settings.idleExitMs = 1000;
    reportAt(d, 50);
    const health = getAt(100, '/healthz');
    const metrics = getAt(200, '/metrics');
    await d.run();
    expect([health.client!.status, health.client!.body]).toEqual([200, 'ok\n']);
    expect(metrics.client!.status).toBe(200);
    expect(metrics.client!.header('Content-Type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(metrics.client!.body).toContain('cni_announcer_frames_sent_total{kind="na"} 1\n');
    expect(metrics.client!.body).toContain('cni_announcer_rounds_total{outcome="sent"} 1\n');
    // Answered at the poll that saw the request: no turn in between.
    const answeredBy = d.poll.calls.filter((c) => c.at === 200);
    expect(answeredBy.length).toBeLessThanOrEqual(2);
    expect(d.sockets.paths).toEqual([]); // the TCP listener closed too
    expect(d.logged('serving /metrics and /healthz').filter((l) => l.includes(`port=${PICKED_PORT}`))).toHaveLength(1);
  });

  it('says 503 on /healthz while it hands over (no longer listening on its socket), 200 before', async () => {
    listen(d);
    d.cniAt(0); // held, and it has acted: the stop lets it end
    d.poll.at(50, () => d.commands[0]!.gate.acting());
    d.poll.at(100, () => void (d.replaced = true));
    d.cniAt(100, 'b2');
    const before = getAt(50, '/healthz');
    const during = getAt(200, '/healthz');
    d.poll.at(300, () => d.commands[0]!.end({ exit: 0, stdout: '' }));
    await d.run();
    expect(before.client!.status).toBe(200);
    expect(during.client!.status).toBe(503);
  });

  it('polls the listening socket in every turn, and the idle loop wakes no more often than without it', async () => {
    const plain = new DaemonLoop();
    try {
      plain.deps.settings.idleExitMs = 5000;
      reportAt(plain, 0);
      await plain.run();
      listen(d);
      d.deps.settings.idleExitMs = 5000;
      reportAt(d, 0);
      await d.run();
      expect(d.poll.calls.length).toBe(plain.poll.calls.length);
      expect(d.poll.calls.map((c) => c.timeoutMs)).toEqual(plain.poll.calls.map((c) => c.timeoutMs));
      const listener = d.poll.calls[0]!.read.find((fd) => !plain.poll.calls[0]!.read.includes(fd));
      expect(listener).toBeDefined();
      expect(d.poll.calls.slice(0, -1).every((c) => c.read.includes(listener!))).toBe(true);
    } finally {
      plain.state.remove();
    }
  });

  it('cannot bind: logs it, never listens on its socket, and ends with HttpListenError', async () => {
    listen(d);
    d.sockets.listen(`tcp:${PICKED_PORT}`); // taken
    await expect(d.run()).rejects.toBeInstanceOf(HttpListenError);
    expect(d.sockets.paths).toEqual([`tcp:${PICKED_PORT}`]);
    expect(d.logged('cannot listen for HTTP').filter((l) => l.includes('EADDRINUSE'))).toHaveLength(1);
  });
});

describe('cni_announcer_add_to_first_round_seconds', () => {
  const observesHostedCommandTitle =
    "observes a hosted command's report of round 1, from when the command was taken; not a report without frames";
  it(observesHostedCommandTitle, async () => {
    Object.assign(d.deps.settings, { idleExitMs: 200, metricsFile: '/m.prom' });
    d.runner = async (_env, _stdin, host) => {
      const takenAt = d.timers.bootMs();
      d.timers.advance(40);
      host.jobHost(takenAt).added('c1@eth0.json', NO_JOB, { sent: { garpRequest: 0, garpReply: 0, na: 0 } });
      host.jobHost(takenAt).added('c1@eth0.json', NO_JOB, { sent: FRAMES });
      return { exit: 0, stdout: '' };
    };
    d.cniAt(10);
    await d.run();
    const text = d.metrics.at(-1)!.text;
    expect(text).toContain('cni_announcer_add_to_first_round_seconds_count 1\n');
    expect(text).toContain('cni_announcer_add_to_first_round_seconds_sum 0.04\n');
    expect(text).toContain('cni_announcer_add_to_first_round_seconds_bucket{le="0.025"} 0\n');
    expect(text).toContain('cni_announcer_add_to_first_round_seconds_bucket{le="0.05"} 1\n');
    expect(text).toContain('cni_announcer_rounds_total{outcome="sent"} 1\n');
  });
});
