// The announcer's whole loop (runDaemon) through fakes: a fake pod, in-memory sockets (unix and TCP), a manual clock
// moved by a scripted poll(2), records in a temporary stateDir, and a runner of CNI commands whose outcomes the test
// decides, given the announcer's parts (Announcer) as the real runner is. Clients connect and send at scripted times
// and read their replies each turn; the log is kept as records.
import { join } from 'node:path';
import type { BackgroundJob } from '../../src/announce/background-job';
import { resolveNodeSettings } from '../../src/cni/node-settings';
import type { Gate } from '../../src/daemon/admission';
import { runDaemon, type Announcer, type DaemonDeps } from '../../src/daemon/daemon';
import type { CommandOutcome } from '../../src/daemon/host';
import type { Counters } from '../../src/daemon/metrics';
import { createLogger } from '../../src/log';
import type { ControlRequest } from '../../src/protocol';
import { ANNOUNCER_SOCKET } from '../../src/state-files';
import { identityCallerViews } from './announcer';
import { FakePod, jobIn, makeStateDir, type StateDir } from './daemon-fakes';
import { fakeLibc, ScriptedPoll } from './fake-libc';
import { FakeSockets, socketCalls } from './fake-sockets';
import { fakeTcp } from './fake-tcp';
import { logRecords, type LogRecord } from './log-records';
import { ManualTimers } from './manual-timers';
import { cniLine, controlLine, WireClient } from './wire-client';

export const BUILD = 'b1';
/** How long a test's shim waits for an answer (its request's deadline, from when it sends). */
export const WAIT_MS = 60_000;

/** A CNI command the runner got, with its gate; `end` settles it. */
export interface HeldCommand {
  env: Record<string, string>;
  at: number;
  gate: Gate;
  end(outcome: CommandOutcome): void;
}

/** Everything around one runDaemon(). */
export class DaemonLoop {
  readonly state: StateDir;
  readonly pod = new FakePod();
  readonly sockets = new FakeSockets();
  readonly timers = new ManualTimers();
  readonly poll = new ScriptedPoll(this.timers, this.sockets);
  readonly lines: string[] = [];
  /** The metrics files written, and when (monotonic ms). */
  readonly metrics: { file: string; text: string; at: number }[] = [];
  readonly commands: HeldCommand[] = [];
  readonly clients: WireClient[] = [];
  /** Fds closed on the loop's thread that are no sockets of the test (packet sockets). */
  readonly closedNow: number[] = [];
  /** What the runner does with a command (by default: holds it in `commands` until the test ends it). */
  runner: (env: Record<string, string>, a: Announcer, gate: Gate) => Promise<CommandOutcome>;
  replaced = false;
  /** What threadsInOtherNetns says; `threadLooks` counts its calls. */
  threads: { tid: number; comm: string }[] = [];
  threadLooks = 0;
  /** The timeouts of every pollIn (outside the loop's own poll: each must be 0, or the loop would block). */
  readonly pollInTimeouts: number[] = [];
  /** When (monotonic ms) the loop stamped its progress, and on which fd. */
  readonly stamps: { at: number; fd: number }[] = [];
  readonly deps: DaemonDeps;

  /** `state`: another announcer's stateDir (the next one after a hand-over), else a new one. */
  constructor(state?: StateDir) {
    this.state = state ?? makeStateDir();
    const log = createLogger((line) => this.lines.push(line), 'debug');
    this.poll.onPoll = () => this.clients.forEach((c) => c.read());
    this.runner = (env, _a, gate) =>
      new Promise((end) => void this.commands.push({ env, at: this.timers.now(), gate, end }));
    const sockets = socketCalls(this.sockets);
    const calls = {
      ...sockets,
      ...fakeTcp(this.sockets),
      pollInOut: this.poll.pollInOut,
      // The probe's look at its receivers: every fd ready (a receiver says when it holds nothing); its timeouts kept.
      pollIn: (fds: readonly number[], ms: number) => (this.pollInTimeouts.push(ms), fds.map(() => true)),
      close: (fd: number) => (this.sockets.owns(fd) ? this.sockets.close(fd) : void this.closedNow.push(fd)),
      closeInBackground: (_fd: number, done?: (error?: unknown) => void) => queueMicrotask(() => done?.()),
      tryLock: () => true,
    };
    this.deps = {
      stateDir: this.state.dir,
      build: BUILD,
      resident: false,
      // The node settings: idle exit 1000 ms after the last work (tests change them before run()).
      settings: resolveNodeSettings({ idleExitMs: 1000 }),
      libc: fakeLibc(calls),
      waitForHolder: () => {
        throw new Error('the lock is free: no wait for its holder');
      },
      open: this.pod.opener(),
      views: identityCallerViews,
      timers: this.timers,
      log,
      jobLog: () => log,
      uid: 0,
      writeMetrics: (file, text) => void this.metrics.push({ file, text, at: this.timers.now() }),
      metricsFileProblem: () => undefined,
      stampProgress: (fd) => void this.stamps.push({ at: this.timers.now(), fd }),
      executableReplaced: () => this.replaced,
      threadsInOtherNetns: () => (this.threadLooks++, this.threads),
      commands: (a) => (env, _stdin, gate) => this.runner(env, a, gate),
    };
  }

  /** Runs the announcer to its end; throws when its loop spun or never ended (ScriptedPoll). */
  async run(): Promise<string> {
    this.poll.stop = () => process.listeners('SIGTERM').at(-1)?.('SIGTERM');
    const took = await runDaemon(this.deps);
    for (const c of this.clients) c.read(); // what the announcer wrote in its last turn
    if (this.poll.spun)
      throw new Error(
        `the announcer's loop spun: ${this.poll.calls.length} polls, the last at ${this.timers.now()} ms`,
      );
    return took;
  }

  /** A job whose round 1 went out `at` ms from now (rounds at 0, 1000, 3000). */
  sentAt(at: number, extra: Partial<BackgroundJob> = {}): BackgroundJob {
    return jobIn(this.state, { firstRoundAt: this.timers.bootMs() + at, ...extra });
  }

  /** At `at` ms a client connects and sends `line(deadline)`, its deadline WAIT_MS on; its replies gather in it. */
  lineAt(at: number, line: (deadline: number) => string | Buffer): { client?: WireClient } {
    const slot: { client?: WireClient } = {};
    this.poll.at(at, () => {
      const client = new WireClient(this.sockets, this.timers, join(this.state.dir, ANNOUNCER_SOCKET));
      this.clients.push(client);
      client.send(line(this.timers.bootMs() + WAIT_MS));
      slot.client = client;
    });
    return slot;
  }

  /** At `at` ms, a control request. */
  controlAt(at: number, control: ControlRequest, build = BUILD): { client?: WireClient } {
    return this.lineAt(at, (deadline) => controlLine(control, deadline, build));
  }

  /** At `at` ms, a CNI command (ADD of container `c<at>` unless `env` says otherwise) of this stateDir. */
  cniAt(at: number, build = BUILD, env: Record<string, string> = {}): { client?: WireClient } {
    const stdin = JSON.stringify({ cniVersion: '1.0.0', name: 'net', type: 'announcer', stateDir: this.state.dir });
    const command = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: `c${at}`, ...env };
    return this.lineAt(at, (deadline) => cniLine(command, stdin, deadline, build));
  }

  /** At `at` ms, `signal` to the announcer. */
  signalAt(at: number, signal: 'SIGTERM' | 'SIGINT'): void {
    this.poll.at(at, () => process.listeners(signal).at(-1)!(signal));
  }

  /** The log so far as records; with `msg`, those with that message. */
  records(msg?: string): LogRecord[] {
    const all = logRecords(this.lines.join('\n'));
    return msg === undefined ? all : all.filter((r) => r.msg === msg);
  }

  /** The rounds announced (their `round` field), in order. */
  announced(): unknown[] {
    return this.records('announced').map((r) => r.fields.round);
  }
}

/** The control answer a client got. */
export function answerOf(slot: { client?: WireClient }): unknown {
  return (slot.client?.lines()[0] as { control?: unknown } | undefined)?.control;
}

/** The counters in a status reply's control answer. */
export function countersOf(slot: { client?: WireClient }): Counters {
  const answer = answerOf(slot) as { status: { counters: Counters } } | undefined;
  if (!answer) throw new Error('no status reply');
  return answer.status.counters;
}
