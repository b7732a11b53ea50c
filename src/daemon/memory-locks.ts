// The attachment locks of the one executor: ADD and DEL of one attachment (and GC's removal of
// it, and a round writing its record) never overlap. In memory, keyed by the lock's path (no file
// is made): a waiter queues and is handed the lock when the holder releases it; one that waits
// past its timeout leaves the queue. The timeout is a wait of the announcer's loop (its poll).
import type { HeldLock, LockFile } from '../announce/attachment-lock';

/** A waiter still in the queue: takes the lock when called (one that gives up leaves the queue at once). */
type Waiter = () => void;

/** The table of attachment locks: `take` is the LockFile the commands and rounds use. */
export class MemoryLocks {
  /** Each held key, with the waiters queued behind its holder. */
  private readonly held = new Map<string, Waiter[]>();

  /** `sleep` waits through the announcer's loop (LoopWaits.sleep). */
  constructor(private readonly sleep: (ms: number) => Promise<void>) {}

  /** Takes the lock of `key` within `timeoutMs`; undefined when it stays held that long. */
  readonly take: LockFile = (key, timeoutMs) => {
    const queue = this.held.get(key);
    if (queue === undefined) {
      this.held.set(key, []);
      return Promise.resolve(this.lock(key));
    }
    if (timeoutMs <= 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      let settled = false;
      const waiter: Waiter = () => {
        settled = true;
        resolve(this.lock(key));
      };
      queue.push(waiter);
      void this.sleep(timeoutMs).then(() => {
        if (settled) return;
        settled = true;
        queue.splice(queue.indexOf(waiter), 1);
        resolve(undefined);
      });
    });
  };

  private lock(key: string): HeldLock {
    let released = false;
    return {
      path: key,
      release: () => {
        if (released) return;
        released = true;
        this.handOn(key);
      },
    };
  }

  /** The next waiter takes the lock; with none, the key is free. */
  private handOn(key: string): void {
    const next = this.held.get(key)!.shift();
    if (next) next();
    else this.held.delete(key);
  }
}
