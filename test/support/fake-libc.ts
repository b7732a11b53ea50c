// A Libc for unit tests: the calls a test supplies, and a loud failure for any
// other; and a scripted poll(2) over the fake sockets and a manual clock.
import type { Libc } from '../../src/sys/libc';
import type { TcpSockets } from '../../src/sys/tcp-socket';
import type { UnixSockets } from '../../src/sys/unix-socket';
import type { FakeSockets } from './fake-sockets';
import type { ManualTimers } from './manual-timers';

/** A Libc whose unsupplied calls throw `unexpected <name>`, so a test sees every syscall the code makes. */
export function fakeLibc(calls: Partial<Libc & UnixSockets & TcpSockets>): Libc & UnixSockets & TcpSockets {
  return new Proxy(calls, {
    get(target, name: string) {
      const call = target[name as keyof Libc];
      if (call) return call;
      return () => {
        throw new Error(`unexpected ${name}`);
      };
    },
  }) as Libc & UnixSockets & TcpSockets;
}

/** One poll(2) as the code asked for it. */
export interface PollCall {
  at: number;
  timeoutMs: number;
  read: number[];
  write: number[];
}

/** Polls in a row at one instant past which the loop is taken to spin. */
const SPIN_LIMIT = 1000;

/**
 * Libc.pollInOut over FakeSockets and a ManualTimers clock, with a script of acts at given times.
 * A poll returns at once when an fd is ready; else it moves the clock to its timeout or the next
 * act, whichever comes first, runs the acts due, and says what is ready then.
 */
export class ScriptedPoll {
  /** Every poll asked for. */
  readonly calls: PollCall[] = [];
  /** Fds other than the fake sockets' that are readable now (a test's pipes, pod event sockets). */
  readonly ready = new Set<number>();
  /** Thrown by the next poll, when set. */
  error: Error | undefined;
  /** Whether the loop polled SPIN_LIMIT times at one instant (each such poll then throws), or past `limit`. */
  spun = false;
  /** Runs before each poll (test clients reading their replies). */
  onPoll: () => void = () => undefined;
  /**
   * Polls after which the loop is stopped through `stop` (a loop that never ends fails instead of hanging the test).
   */
  limit = 20_000;
  /** Stops the loop under test. */
  stop: () => void = () => undefined;
  private readonly acts: { at: number; act: () => void }[] = [];

  constructor(
    private readonly timers: ManualTimers,
    private readonly sockets: FakeSockets,
  ) {}

  /** Runs `act` at `at` ms on the manual clock. */
  at(at: number, act: () => void): void {
    this.acts.push({ at, act });
  }

  readonly pollInOut: Libc['pollInOut'] = (readFds, writeFds, timeoutMs) => {
    this.calls.push({ at: this.timers.now(), timeoutMs, read: [...readFds], write: [...writeFds] });
    if (this.calls.length > this.limit) {
      this.spun = true;
      this.stop();
    }
    this.onPoll();
    if (Number.isNaN(timeoutMs) || timeoutMs < 0) throw new Error(`poll(2) with a timeout of ${timeoutMs} ms`);
    this.runDue();
    this.checkSpin();
    if (this.error) {
      const err = this.error;
      this.error = undefined;
      throw err;
    }
    let ready = this.readyOf(readFds, writeFds);
    if (ready.readable.size + ready.writable.size === 0) {
      const next = Math.min(...this.acts.map((a) => a.at), this.timers.now() + timeoutMs);
      if (!Number.isFinite(next))
        throw new Error('poll(2) without a timeout and nothing scripted: the test would hang');
      this.timers.advance(Math.max(0, next - this.timers.now()));
      this.runDue();
      ready = this.readyOf(readFds, writeFds);
    }
    return ready;
  };

  private readyOf(
    readFds: readonly number[],
    writeFds: readonly number[],
  ): { readable: Set<number>; writable: Set<number> } {
    const readable = (fd: number): boolean => (this.sockets.owns(fd) ? this.sockets.readable(fd) : this.ready.has(fd));
    return {
      readable: new Set(readFds.filter(readable)),
      writable: new Set(writeFds.filter((fd) => this.sockets.writable(fd))),
    };
  }

  private runDue(): void {
    for (;;) {
      const due = this.acts.filter((a) => a.at <= this.timers.now()).sort((a, b) => a.at - b.at)[0];
      if (!due) return;
      this.acts.splice(this.acts.indexOf(due), 1);
      due.act();
    }
  }

  private checkSpin(): void {
    const now = this.timers.now();
    const recent = this.calls.slice(-SPIN_LIMIT);
    if (recent.length === SPIN_LIMIT && recent.every((c) => c.at === now)) {
      this.spun = true;
      throw new Error(`the loop spins: ${SPIN_LIMIT} polls at ${now} ms`);
    }
  }
}
