// A ControlSocket over FakeSockets and a manual clock, with handlers that
// record control requests and hold each CNI command's promise for the test to
// settle by hand; `turn()` serves what a poll(2) would report ready.
import type { Gate } from '../../src/daemon/admission';
import { join } from 'node:path';
import { ControlSocket, type ControlDeps, type RequestHandlers } from '../../src/daemon/control';
import type { Reply, Request } from '../../src/daemon/protocol';
import { ANNOUNCER_SOCKET } from '../../src/state-files';
import { keptLog, makeStateDir, type StateDir } from './daemon-fakes';
import { FakeSockets } from './fake-sockets';
import { ManualTimers } from './manual-timers';
import { WireClient } from './wire-client';

export const UID = 1000;

/** A CNI command handed to the runner, and how the test ends it. */
export interface HeldRun {
  env: Record<string, string>;
  stdin: string;
  build: string;
  gate: Gate;
  end(outcome: { exit: number; stdout: string }): void;
  fail(error: unknown): void;
}

/** The control socket under test and everything around it. */
export class ControlFixture {
  readonly state: StateDir = makeStateDir();
  readonly sockets = new FakeSockets();
  readonly timers = new ManualTimers();
  readonly handled: Request[] = [];
  /** The CNI commands served to their end, by CNI_COMMAND. */
  readonly served: (string | undefined)[] = [];
  readonly runs: HeldRun[] = [];
  readonly failures: [string, unknown][] = [];
  readonly lines: string[];
  readonly address = join(this.state.dir, ANNOUNCER_SOCKET);
  /** What cni() refuses with, when set. */
  refuse: string | undefined;
  /** What control() answers. */
  answer: (request: Request) => Reply = () => ({ ok: true });
  readonly deps: ControlDeps;
  readonly control: ControlSocket;

  constructor() {
    this.sockets.peerUid = UID;
    const kept = keptLog();
    this.lines = kept.lines;
    this.deps = { stateDir: this.state.dir, sockets: this.sockets, timers: this.timers, log: kept.log, uid: UID };
    const handlers: RequestHandlers = {
      control: (request) => (this.handled.push(request), this.answer(request)),
      cni: (command) => {
        if (this.refuse !== undefined) return { refused: this.refuse };
        return new Promise((resolve, reject) => void this.runs.push({ ...command, end: resolve, fail: reject }));
      },
      served: (command) => void this.served.push(command),
    };
    this.control = new ControlSocket(this.deps, handlers, (what, error) => void this.failures.push([what, error]));
  }

  /** One serve() with what poll(2) would report: readable sockets among fds(), writable ones among writeFds(). */
  turn(): void {
    const readable = this.control.fds().filter((fd) => this.sockets.readable(fd));
    const writable = this.control.writeFds().filter((fd) => this.sockets.writable(fd));
    this.control.serve(new Set(readable), new Set(writable));
  }

  /** A client that connects and sends `text` (when given); a turn accepts it, the next reads it. */
  client(text?: string | Buffer): WireClient {
    const client = new WireClient(this.sockets, this.timers, this.address);
    if (text !== undefined) client.send(text);
    this.turn();
    this.turn();
    return client;
  }

  /** The log lines that contain `text`. */
  logged(text: string): string[] {
    return this.lines.filter((l) => l.includes(text));
  }
}
