// Closes the announcer's packet sockets on worker threads, a bounded number
// at a time. A packet socket's close waits for an RCU grace period (8-16 ms),
// so the loop hands it to koffi's async queue; that queue holds at most 256
// calls and the 257th throws. At most `limit` closes are in flight here;
// beyond that an fd waits in a FIFO until one completes, and a close that
// cannot be queued runs synchronously. Nothing here ever throws.

/** The close calls the closer is built on. */
export interface CloseCalls {
  /** close(2) on a worker thread; `done` hears its error, if any, on the loop's thread. */
  closeInBackground(fd: number, done: (error?: unknown) => void): void;
  /** close(2) on this thread. */
  close(fd: number): void;
}

/** How many background closes are queued at most (koffi allows 256 queued async calls in all). */
export const MAX_CLOSES_IN_FLIGHT = 32;

/** Closes fds in the background, at most `limit` at once. */
export class BackgroundCloser {
  private inFlight = 0;
  private readonly waiting: number[] = [];

  /** `failed` hears of every close that failed (it must not throw). */
  constructor(
    private readonly calls: CloseCalls,
    private readonly failed: (fd: number, error: unknown) => void,
    private readonly limit = MAX_CLOSES_IN_FLIGHT,
  ) {}

  /** Closes background work still has to do: in flight and waiting. */
  get pending(): number {
    return this.inFlight + this.waiting.length;
  }

  /** Closes `fd` on a worker thread, now or once a close in flight completes. */
  close(fd: number): void {
    if (this.inFlight >= this.limit) this.waiting.push(fd);
    else this.issue(fd);
  }

  /** Closes every waiting fd on this thread (the announcer stops); those in flight complete on their own. */
  closeWaiting(): void {
    for (const fd of this.waiting.splice(0)) this.closeNow(fd);
  }

  private issue(fd: number): void {
    this.inFlight++;
    try {
      this.calls.closeInBackground(fd, (error) => this.completed(fd, error));
    } catch (err) {
      // koffi's queue is full after all (closes queued by someone else): close it here.
      this.inFlight--;
      this.failed(fd, err);
      this.closeNow(fd);
    }
  }

  private completed(fd: number, error: unknown): void {
    this.inFlight--;
    if (error !== undefined) this.failed(fd, error);
    const next = this.waiting.shift();
    if (next !== undefined) this.issue(next);
  }

  private closeNow(fd: number): void {
    try {
      this.calls.close(fd);
    } catch (err) {
      this.failed(fd, err);
    }
  }
}
