// The CNI commands as the announcer hosts them (src/daemon/host.ts), on its real parts (test/support/announcer.ts):
// dispatch and the commands in their caller's view, the stateDir check after the one config parse, node options said
// once and never applied; the logs as each caller sees its logFile; the attachment locks of the one executor; the
// closes of packet sockets on worker threads.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Gate } from '../../../src/daemon/admission';
import {
  BackgroundCloser,
  cniRunner,
  jobLogInView,
  loggerInView,
  MAX_CLOSES_IN_FLIGHT,
  MemoryLocks,
  viewOfCaller,
} from '../../../src/daemon/host';
import type { Announcer } from '../../../src/daemon/daemon';
import { createLogger } from '../../../src/log';
import { ABI } from '../../../src/sys/abi/kernel-abi';
import { CallerViewError, type CallerView } from '../../../src/sys/caller-view';
import { testAnnouncer, viewsOf, type TestAnnouncer } from '../../support/announcer';
import { identityView } from '../../support/caller-view-fakes';
import { FakePod, makeStateDir, type StateDir } from '../../support/daemon-fakes';
import { fakeLibc } from '../../support/fake-libc';
import { logRecords } from '../../support/log-records';
import { ManualTimers, settle } from '../../support/manual-timers';

/** A caller's view that sees a pod's netns (`netns`) as an nsfs file that is not this process's netns. */
const podView = (netns: string): CallerView => ({
  caller: { mnt: { dev: 1, ino: 1 }, net: { dev: 1, ino: 1 } },
  path: (p) => (p === netns ? '/proc/self/ns/mnt' : p),
});

let state: StateDir;
let pod: FakePod;
let timers: ManualTimers;
let closed: number[];
/** The commands' own log lines (their networks' logs). */
let lines: string[];
beforeEach(() => {
  state = makeStateDir();
  pod = new FakePod();
  timers = new ManualTimers();
  closed = [];
  lines = [];
});
afterEach(() => state.remove());

/**
 * The runner on an announcer whose callers see the fake pod (its pod() takes 40 ms), `over` replacing any part; libc
 * says every namespace file is a netns and opens packet socket 77.
 */
function hosted(over: Partial<Announcer> = {}): { a: TestAnnouncer; run: ReturnType<typeof cniRunner> } {
  const view = podView(state.netns);
  const opener = pod.opener();
  const open = {
    ...opener,
    pod: (netns: string) => {
      timers.advance(40);
      const sockets = opener.pod(netns);
      return { ...sockets, rtnl: Object.assign(sockets.rtnl, { routes: () => [] }) };
    },
  };
  const libc = fakeLibc({
    nsType: () => ABI.CLONE_NEWNET,
    openPacketSocket: () => 77,
    pollIn: (fds) => fds.map(() => true),
  });
  const parts = { views: viewsOf({ mine: view, ofPeer: () => view, forRecorded: () => view }), open, libc };
  const a = testAnnouncer(state, pod, timers, { ...parts, closeInBackground: (fd) => void closed.push(fd), ...over });
  return { a, run: cniRunner(a, () => createLogger((line) => lines.push(line), 'debug')) };
}

/** A config of network `name` on this stateDir, with `extra`. */
const conf = (extra: object = {}, name = 'net'): string =>
  JSON.stringify({ cniVersion: '1.1.0', name, type: 'announcer', stateDir: state.dir, ...extra });
const ADD_ENV = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c1', CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin' };
const addStdin = (): string =>
  conf({
    prevResult: {
      cniVersion: '1.1.0',
      interfaces: [{ name: 'eth0', sandbox: state.netns }],
      ips: [{ address: '10.88.0.5/24', interface: 0 }],
    },
  });
const wanted = (): Gate => new Gate(() => true);
const errorOf = (stdout: string): { code: number; msg: string } => JSON.parse(stdout);

describe('cniRunner', () => {
  const addTitle =
    "runs an ADD in its caller's view on the announcer's parts: round 1 counted, its job in the table, its time " +
    'to round 1 observed from when the command was taken';
  it(addTitle, async () => {
    const { a, run } = hosted();
    const done = await run({ ...ADD_ENV, CNI_NETNS: state.netns }, addStdin(), wanted());
    expect(done.exit).toBe(0);
    expect([pod.sent.length, a.jobs.size, a.counters.rounds.sent]).toEqual([1, 1, 1]);
    const text = await a.metrics.text();
    expect(text).toContain('cni_announcer_add_to_first_round_seconds_sum 0.04\n');
    expect(text).toContain('cni_announcer_add_to_first_round_seconds_count 1\n');
  });

  const statusTitle =
    'runs STATUS through dispatch, its packet socket closed on ' +
    'another thread; node options in a conflist are accepted ' +
    "unchecked, never applied, and said once per network on that network's log, with where to set them";
  it(statusTitle, async () => {
    const { a, run } = hosted();
    const options = { idleExitMs: 'soon', metricsFile: '/run/x.prom' };
    for (let i = 0; i < 3; i++)
      expect(await run({ CNI_COMMAND: 'STATUS' }, conf(options), wanted())).toEqual({ exit: 0, stdout: '' });
    expect(closed).toEqual([77, 77, 77]);
    expect(a.settings.idleExitMs).toBe(30_000);
    const warned = logRecords(lines.join('\n')).filter((r) => r.level === 'warn');
    const got = warned.map((r) => [r.msg, r.fields.network]);
    expect(got).toEqual([["node options in this network's conflist are ignored: the node settings apply", 'net']]);
    const { options: said, inForce, setInstead } = warned[0]!.fields;
    expect(JSON.parse(said as string)).toEqual(options);
    expect(JSON.parse(inForce as string)).toEqual({ idleExitMs: 30_000, metricsFile: null });
    expect(setInstead).toMatch(
      /^\["\\"idleExitMs\\" in <stateDir>\/announcer.conf \(announcer install --idle-exit-ms\)",.*--metrics-file/,
    );
    expect(a.records()).toEqual([]);
  });

  const pairTitle =
    "two networks of this stateDir whose node options differ: one WARN on the announcer's log naming both and the " +
    'options that differ; the same values: none';
  it(pairTitle, async () => {
    const { a, run } = hosted();
    const rate = { framesPerSecond: 1, burst: 1 };
    for (const [name, idleExitMs] of [
      ['a', 5000],
      ['b', 60_000],
      ['a', 5000],
      ['b', 60_000],
      ['c', 5000],
    ] as const)
      await run({ CNI_COMMAND: 'STATUS' }, conf({ idleExitMs, rateLimit: rate }, name), wanted());
    const pair = 'two networks of this stateDir set node options differently: both are ignored';
    const said = a.records().map((r) => [r.level, r.msg, r.fields.networks, r.fields.options]);
    expect(said).toEqual([
      ['warn', pair, '["a","b"]', '{"idleExitMs":{"a":5000,"b":60000}}'],
      ['warn', pair, '["b","c"]', '{"idleExitMs":{"b":60000,"c":5000}}'],
    ]);
  });

  it('answers bad input with the CNI error object dispatch prints, and shows no config', async () => {
    const { run } = hosted();
    const done = await run({ CNI_COMMAND: 'STATUS' }, conf({ count: 'many' }), wanted());
    expect(done.exit).toBe(1);
    expect(errorOf(done.stdout)).toMatchObject({ code: 7, msg: expect.stringMatching(/count/) });
    expect(lines).toEqual([]);
  });

  it(
    "fails a command whose config's stateDir is not this " + "announcer's with code 7 naming it, and runs nothing",
    async () => {
      const { a, run } = hosted();
      for (const command of ['ADD', 'DEL']) {
        const other = addStdin().replace(JSON.stringify(state.dir), '"/run/elsewhere"');
        const done = await run({ ...ADD_ENV, CNI_COMMAND: command, CNI_NETNS: state.netns }, other, wanted());
        expect([command, done.exit, errorOf(done.stdout).code]).toEqual([command, 1, 7]);
        expect(errorOf(done.stdout).msg).toMatch(/^"stateDir" is "\/run\/elsewhere", and this announcer serves "/);
      }
      expect([pod.opened, a.jobs.size]).toEqual([0, 0]);
    },
  );

  it(
    "without its caller's view, fails ADD and CHECK with " + 'code 100 naming why; DEL, GC and STATUS run in its own',
    async () => {
      const { run } = hosted({
        views: viewsOf({
          mine: identityView,
          ofPeer: () => {
            throw new CallerViewError('not visible');
          },
          forRecorded: () => identityView,
        }),
      });
      const caller = { pid: 42, connected: () => true };
      for (const command of ['ADD', 'CHECK']) {
        const env = { ...ADD_ENV, CNI_COMMAND: command, CNI_NETNS: state.netns };
        const done = await run(env, addStdin(), wanted(), caller);
        expect([command, errorOf(done.stdout).code, errorOf(done.stdout).msg]).toEqual([command, 100, 'not visible']);
      }
      expect(await run({ CNI_COMMAND: 'STATUS' }, conf(), wanted(), caller)).toEqual({ exit: 0, stdout: '' });
    },
  );
});

describe('the views commands and jobs run in', () => {
  const other: CallerView = { caller: { mnt: { dev: 9, ino: 9 }, net: { dev: 9, ino: 9 } }, path: (p) => `/o${p}` };
  const views = (ofPeer: (pid: number) => CallerView) =>
    viewsOf({ mine: identityView, ofPeer, forRecorded: () => undefined });

  it("viewOfCaller: the announcer's own without a caller, the peer's while it waits, else why there is none", () => {
    const peers = views(() => other);
    expect(viewOfCaller(peers, undefined)).toBe(identityView);
    expect(viewOfCaller(peers, { pid: 42, connected: () => true })).toBe(other);
    const gone = viewOfCaller(peers, { pid: 42, connected: () => false });
    expect(gone).toBeInstanceOf(CallerViewError);
    expect((gone as Error).message).toMatch(/pid 42\) left before its view/);
    const hidden = () => {
      throw new CallerViewError('pid 0');
    };
    expect((viewOfCaller(views(hidden), { pid: 0, connected: () => true }) as Error).message).toBe('pid 0');
  });

  const logsTitle =
    "a command's logFile as its caller sees it, and a job's as its caller saw it (else as the announcer sees it), " +
    'their last component never followed';
  it(logsTitle, () => {
    const asked: (string | undefined)[] = [];
    const seen: CallerView = {
      ...other,
      path: (p, opts) => (opts?.followLast === false ? `/caller${p}` : '/followed'),
    };
    const logger = createLogger(() => {}, 'error');
    const commandLog = loggerInView((config) => (asked.push(config.logFile), logger), seen);
    commandLog({ logFile: '/var/log/a.log', logLevel: 'info' }, {});
    commandLog({ logLevel: 'info' }, {});
    const held: CallerView = { ...other, path: (p, opts) => `/held${p}${opts?.followLast === false ? '' : '!'}` };
    const gone = { mnt: { dev: 9, ino: 9 }, net: { dev: 9, ino: 9 } };
    const jobLog = jobLogInView(
      (job) => (asked.push(job.logFile), logger),
      viewsOf({ mine: identityView, ofPeer: () => identityView, forRecorded: (c) => (c === gone ? undefined : held) }),
    );
    const job = { logFile: '/var/log/b.log', caller: other.caller } as Parameters<typeof jobLog>[0];
    jobLog(job);
    jobLog({ ...job, caller: gone });
    jobLog({ ...job, logFile: undefined });
    expect(asked).toEqual(['/caller/var/log/a.log', undefined, '/held/var/log/b.log', '/var/log/b.log', undefined]);
  });
});

describe('MemoryLocks', () => {
  /** Locks whose timeouts fire only when the test says; a stopped wait rejects with its signal's reason. */
  function locks() {
    const timeouts: { ms: number; fire: () => void }[] = [];
    const table = new MemoryLocks(
      (ms, signal) =>
        new Promise((resolve, reject) => {
          timeouts.push({ ms, fire: resolve });
          signal?.addEventListener('abort', () => reject(signal.reason));
        }),
    );
    return { table, timeouts };
  }

  it(
    'gives a free key at once, refuses a held one with ' + 'no wait, and frees it on release (twice: no effect)',
    async () => {
      const { table } = locks();
      const a = await table.take('c1', 0);
      expect([await table.take('c1', 0), await table.take('c2', 0)]).toEqual([undefined, expect.anything()]);
      a!.release();
      a!.release();
      expect(await table.take('c1', 0)).toBeDefined();
      expect(await table.take('c1', 0)).toBeUndefined();
    },
  );

  it('hands the lock to the waiters in order as each holder releases it, without any timer firing', async () => {
    const { table, timeouts } = locks();
    const first = await table.take('k', 0);
    const order: string[] = [];
    const second = table.take('k', 1000).then((l) => (order.push('second'), l));
    const third = table.take('k', 1000).then((l) => (order.push('third'), l));
    await settle();
    expect(order).toEqual([]);
    first!.release();
    (await second)!.release();
    expect(await third).toBeDefined();
    expect(order).toEqual(['second', 'third']);
    expect(timeouts.map((t) => t.ms)).toEqual([1000, 1000]);
  });

  const leavesTitle =
    'a waiter whose timeout passes gets undefined, and one ' +
    'whose command is stopped is rejected with its reason: both ' +
    'leave the queue, the next still gets the lock; a timeout after the lock was handed over undoes nothing';
  it(leavesTitle, async () => {
    const { table, timeouts } = locks();
    const holder = await table.take('k', 0);
    const stop = new AbortController();
    const late = table.take('k', 100);
    const stopped = table.take('k', 5000, stop.signal);
    const patient = table.take('k', 5000);
    const last = table.take('k', 5000);
    await settle();
    timeouts[0]!.fire();
    stop.abort(new Error('the announcer stops'));
    expect(await late).toBeUndefined();
    await expect(stopped).rejects.toThrow('the announcer stops');
    holder!.release();
    const got = await patient;
    timeouts[2]!.fire(); // the patient one's timeout, after it took the lock
    await settle();
    got!.release();
    expect(await last).toBeDefined();
    expect(await table.take('k', 0)).toBeUndefined();
  });
});

describe('BackgroundCloser', () => {
  /** Close calls whose background completions the test releases by hand; `refuse`, `failNow` make them throw. */
  function closer() {
    const c = {
      inFlight: [] as { fd: number; done: (error?: unknown) => void }[],
      closedNow: [] as number[],
      failures: [] as [number, unknown][],
      refuse: undefined as Error | undefined,
      failNow: undefined as Error | undefined,
    };
    const calls = {
      closeInBackground: (fd: number, done: (error?: unknown) => void) => {
        if (c.refuse) throw c.refuse;
        c.inFlight.push({ fd, done });
      },
      close: (fd: number) => {
        if (c.failNow) throw c.failNow;
        c.closedNow.push(fd);
      },
    };
    return { c, closer: new BackgroundCloser(fakeLibc(calls), (fd, error) => void c.failures.push([fd, error])) };
  }
  const fds = (c: { inFlight: { fd: number }[] }): number[] => c.inFlight.map((x) => x.fd);
  /** The fds from..from+n-1. */
  const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);
  const LIMIT = MAX_CLOSES_IN_FLIGHT;

  it(`has at most ${LIMIT} closes in flight; the others wait and are issued in order`, () => {
    const { c, closer: limited } = closer();
    for (const fd of range(100, LIMIT + 2)) limited.close(fd);
    expect(fds(c)).toEqual(range(100, LIMIT));
    c.inFlight.shift()!.done();
    expect(fds(c)).toEqual(range(101, LIMIT));
    for (let i = 0; i < LIMIT + 1; i++) c.inFlight.shift()!.done();
    expect([fds(c), c.failures, c.closedNow]).toEqual([[], [], []]);
  });

  it('reports a close that failed on its worker thread, and goes on with the next', () => {
    const { c, closer: limited } = closer();
    for (const fd of range(100, LIMIT + 1)) limited.close(fd);
    const err = new Error('EIO');
    c.inFlight.shift()!.done(err);
    expect([c.failures, fds(c).at(-1)]).toEqual([[[100, err]], 100 + LIMIT]);
  });

  it(
    'closes on this thread when koffi refuses the async call, ' +
      'reporting it; a failing close is reported, not thrown',
    () => {
      const { c, closer: limited } = closer();
      const full = new Error('too many async calls');
      c.refuse = full;
      limited.close(10);
      expect([c.closedNow, c.failures, fds(c)]).toEqual([[10], [[10, full]], []]);
      const ebadf = new Error('EBADF');
      c.failNow = ebadf;
      expect(() => limited.close(11)).not.toThrow();
      const got = c.failures.map(([fd, e]) => `${fd} ${(e as Error).message}`);
      expect(got).toEqual(['10 too many async calls', '11 too many async calls', '11 EBADF']);
      // The refused calls did not stay counted as in flight.
      c.refuse = c.failNow = undefined;
      for (const fd of range(100, LIMIT)) limited.close(fd);
      expect(fds(c)).toEqual(range(100, LIMIT));
    },
  );

  it('closeWaiting closes every waiting fd on this thread and leaves those in flight alone', () => {
    const { c, closer: limited } = closer();
    for (const fd of range(100, LIMIT + 2)) limited.close(fd);
    limited.closeWaiting();
    expect([c.closedNow, fds(c)]).toEqual([range(100 + LIMIT, 2), range(100, LIMIT)]);
    for (let i = 0; i < LIMIT; i++) c.inFlight.shift()!.done();
    expect(fds(c)).toEqual([]);
  });
});
