// The announcer's whole loop through fakes: a fake pod and budget, in-memory
// sockets, a manual clock moved by a scripted poll(2), records in a temporary
// stateDir, and a runner of CNI commands whose outcomes the test decides.
// Clients connect and send at scripted times and read their replies each turn.
import { join } from 'node:path';
import type { BackgroundJob } from '../../src/announce/background-job';
import type { Gate } from '../../src/daemon/admission';
import type { CniRunner, CommandOutcome } from '../../src/daemon/cni-host';
import type { Counters } from '../../src/daemon/counters';
import { runDaemon } from '../../src/daemon/daemon';
import type { CommandHost, DaemonDeps } from '../../src/daemon/daemon-deps';
import { ANNOUNCER_SOCKET } from '../../src/state-files';
import { FakePod, jobIn, keptLog, makeStateDir, ScriptedBudget, type StateDir } from './daemon-fakes';
import { fakeLibc, ScriptedPoll } from './fake-libc';
import { FakeSockets } from './fake-sockets';
import { ManualTimers } from './manual-timers';
import { cniLine, controlLine, WireClient } from './wire-client';
import { identityViews } from './caller-view-fakes';

export const BUILD = 'b1';

/** How long an older shim (its requests carry no deadline) waited for the `ack`. */
export const ACK_MS = 300;

/** A CNI command the runner got, with its gate; `end` settles it. */
export interface HeldCommand {
  env: Record<string, string>;
  stdin: string;
  at: number;
  gate: Gate;
  end(outcome: CommandOutcome): void;
}

/** Everything around one runDaemon(). */
export class DaemonLoop {
  readonly state: StateDir;
  readonly pod = new FakePod();
  readonly budget = new ScriptedBudget();
  readonly sockets = new FakeSockets();
  readonly timers = new ManualTimers();
  readonly poll = new ScriptedPoll(this.timers, this.sockets);
  readonly lines: string[];
  readonly metrics: { file: string; text: string }[] = [];
  readonly commands: HeldCommand[] = [];
  readonly clients: WireClient[] = [];
  /** The host the announcer gave its runner. */
  host: CommandHost | undefined;
  /** What the runner does with a command (by default: holds it in `commands` until the test ends it). */
  runner: (env: Record<string, string>, stdin: string, host: CommandHost, gate: Gate) => Promise<CommandOutcome>;
  replaced = false;
  /** What threadsInOtherNetns answers (threads born in a pod's netns), and how often it was asked. */
  strayThreads: { tid: number; comm: string }[] = [];
  threadLooks = 0;
  /** The timeouts of every pollIn (outside the loop's own poll: each must be 0, or the loop would block). */
  readonly pollInTimeouts: number[] = [];
  /** When (monotonic ms) the loop stamped its progress, and on which fd. */
  readonly stamps: { at: number; fd: number }[] = [];
  readonly deps: DaemonDeps;

  /** `state`: another announcer's stateDir (the next one after a hand-over), else a new one. */
  constructor(state?: StateDir) {
    this.state = state ?? makeStateDir();
    this.timers.sleep = async (ms) => this.timers.advance(ms);
    const kept = keptLog();
    this.lines = kept.lines;
    this.poll.onPoll = () => this.clients.forEach((c) => c.read());
    this.runner = (env, stdin, _host, gate) =>
      new Promise((end) => void this.commands.push({ env, stdin, at: this.timers.now(), gate, end }));
    this.deps = {
      stateDir: this.state.dir,
      views: identityViews,
      // pollIn is the probe's look at its receivers: every fd ready (a receiver says when it holds nothing); its
      // timeouts are kept.
      libc: fakeLibc({
        pollInOut: this.poll.pollInOut,
        pollIn: (fds, ms) => (this.pollInTimeouts.push(ms), fds.map(() => true)),
        close: () => undefined,
      }),
      sockets: this.sockets,
      open: this.pod.opener(),
      timers: this.timers,
      jobLog: () => kept.log,
      log: kept.log,
      // The node settings: idle exit 1000 ms after the last work (tests change them before run()).
      settings: { idleExitMs: 1000, logLevel: 'info' },
      budget: this.budget.budget,
      uid: 0,
      tryLock: () => true,
      waitForHolder: () => {
        throw new Error('the lock is free: no wait for its holder');
      },
      writeMetrics: (file, text) => void this.metrics.push({ file, text }),
      metricsFileProblem: () => undefined,
      closeInBackground: (_fd, done) => queueMicrotask(() => done()),
      build: BUILD,
      executableReplaced: () => this.replaced,
      stampProgress: (fd) => void this.stamps.push({ at: this.timers.now(), fd }),
      threadsInOtherNetns: () => (this.threadLooks++, this.strayThreads),
      commands: (host): CniRunner => {
        this.host = host;
        return (env, stdin, gate) => this.runner(env, stdin, host, gate);
      },
    };
  }

  /** Runs the announcer to its end; throws when its loop spun or never ended (ScriptedPoll). */
  async run(): Promise<void> {
    this.poll.stop = () => process.listeners('SIGTERM').at(-1)?.('SIGTERM');
    await runDaemon(this.deps);
    for (const c of this.clients) c.read(); // what the announcer wrote in its last turn
    if (this.poll.spun)
      throw new Error(
        `the announcer's loop spun: ${this.poll.calls.length} polls, the last at ${this.timers.now()} ms`,
      );
  }

  /** A job whose round 1 went out `at` ms from now (rounds at 0, 1000, 3000; idle exit 1000 ms after the work). */
  sentAt(at: number, extra: Partial<BackgroundJob> = {}): BackgroundJob {
    return jobIn(this.state, { firstRoundAt: this.timers.bootMs() + at, ...extra });
  }

  /**
   * At `at` ms a client connects and sends `line(ackBy)`, ackBy ACK_MS after it sends (on CLOCK_BOOTTIME); its replies
   * gather in the client.
   */
  lineAt(at: number, line: (ackBy: number) => string | Buffer): { client?: WireClient } {
    const slot: { client?: WireClient } = {};
    this.poll.at(at, () => {
      const client = new WireClient(this.sockets, this.timers, join(this.state.dir, ANNOUNCER_SOCKET));
      this.clients.push(client);
      client.send(line(this.timers.bootMs() + ACK_MS));
      slot.client = client;
    });
    return slot;
  }

  /** At `at` ms, a control request. */
  controlAt(at: number, control: Record<string, unknown>, build = BUILD): { client?: WireClient } {
    return this.lineAt(at, (ackBy) => controlLine(control, ackBy, build));
  }

  /** At `at` ms, a CNI command of this stateDir (or `stdin`). */
  cniAt(at: number, build = BUILD, stdin = this.stdin()): { client?: WireClient } {
    return this.lineAt(at, (ackBy) => cniLine({ CNI_COMMAND: 'ADD', CNI_CONTAINERID: `c${at}` }, stdin, ackBy, build));
  }

  /** A network config whose stateDir is this one. */
  stdin(stateDir = this.state.dir): string {
    return JSON.stringify({ cniVersion: '1.0.0', name: 'net', type: 'announcer', stateDir });
  }

  /** At `at` ms, `signal` to the announcer. */
  signalAt(at: number, signal: 'SIGTERM' | 'SIGINT'): void {
    this.poll.at(at, () => process.listeners(signal).at(-1)!(signal));
  }

  /** The log lines that contain `text`. */
  logged(text: string): string[] {
    return this.lines.filter((l) => l.includes(text));
  }
}

/** The counters in a status reply's control answer. */
export function countersOf(slot: { client?: WireClient }): Counters {
  const reply = slot.client?.lines()[0] as { control: { status: { counters: Counters } } } | undefined;
  if (!reply) throw new Error('no status reply');
  return reply.control.status.counters;
}

/** The control answer a client got. */
export function answerOf(slot: { client?: WireClient }): unknown {
  return (slot.client?.lines()[0] as { control?: unknown } | undefined)?.control;
}
