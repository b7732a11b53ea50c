// The gate the workers pass before each announcer ADD. The chaos schedule closes it to make the node quiet (every
// worker's pod prepared and waiting, every earlier pod deleted: the announcer has no work and goes idle), then opens
// it, so every waiting worker's ADD reaches the announcer within milliseconds of the others.

/** Workers wait at it while it is closed. */
export class Gate {
  private opened: Promise<void> = Promise.resolve();
  private release: () => void = () => undefined;
  private closed = false;
  private readonly waiting = new Set<number>();
  private readonly busy = new Set<number>();

  /** Closes the gate: workers reaching it from now on wait. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.opened = new Promise((resolve) => {
      this.release = resolve;
    });
  }

  /** Opens it: every waiting worker goes on. */
  open(): void {
    this.closed = false;
    this.release();
  }

  /** A worker's pass before its ADD: at once while open, else when opened. */
  async pass(worker: number): Promise<void> {
    if (!this.closed) return;
    this.waiting.add(worker);
    try {
      await this.opened;
    } finally {
      this.waiting.delete(worker);
    }
  }

  /** A worker is running (it counts for quiet); `false` once it has ended. */
  running(worker: number, yes: boolean): void {
    if (yes) this.busy.add(worker);
    else this.busy.delete(worker);
  }

  /** Whether every running worker waits at the gate (and at least one runs). */
  get quiet(): boolean {
    return this.closed && [...this.busy].every((w) => this.waiting.has(w));
  }
}
