// The waits of the CNI commands the announcer runs, resolved by its one
// poll(2) loop: each pending wait adds its fds and deadline to the loop's
// poll, and the loop settles it once an fd is readable or its time is up. So
// a command that waits (a pod not ready, a probe window, the rate limit, a
// lock) holds up no other command and no round.

interface PendingWait {
  fds: readonly number[];
  /** Monotonic ms. */
  until: number;
  resolve(): void;
}

/** The pending waits of the announcer's commands. */
export class LoopWaits {
  private readonly pending = new Set<PendingWait>();

  /** `now`: the monotonic clock the deadlines are on. */
  constructor(private readonly now: () => number) {}

  /**
   * Resolves once one of `fds` is readable or `ms` has passed (at the loop's next turn after); rejects with `signal`'s
   * reason once it aborts (its command is stopped).
   */
  readable(fds: readonly number[], ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const wait: PendingWait = { fds: [...fds], until: this.now() + Math.max(0, ms), resolve };
      this.pending.add(wait);
      if (!signal) return;
      const aborted = (): void => {
        if (this.pending.delete(wait)) reject(signal.reason);
      };
      signal.addEventListener('abort', aborted, { once: true });
      wait.resolve = () => {
        signal.removeEventListener('abort', aborted);
        resolve();
      };
    });
  }

  /** Resolves after `ms`; rejects as readable does. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.readable([], ms, signal);
  }

  /** Every fd a pending wait waits on. */
  fds(): number[] {
    return [...new Set([...this.pending].flatMap((w) => w.fds))];
  }

  /** Ms until the first deadline (Infinity with none). */
  msLeft(): number {
    let first = Infinity;
    for (const w of this.pending) first = Math.min(first, w.until);
    return Math.max(0, first - this.now());
  }

  /** Settles the waits with a readable fd or past their deadline. */
  settle(readable: ReadonlySet<number>): void {
    const now = this.now();
    for (const w of [...this.pending]) {
      if (w.until > now && !w.fds.some((fd) => readable.has(fd))) continue;
      this.pending.delete(w);
      w.resolve();
    }
  }

  /** Settles every wait (the announcer stops: commands run on to their end). */
  settleAll(): void {
    for (const w of this.pending) w.resolve();
    this.pending.clear();
  }
}
