// When the announcer hands over: a command of another build finds this
// executable replaced (an upgrade), a resident announcer asks, or a resident
// one is stopped. From then on it serves no more; its loop writes where each
// burst stands once the running commands end (handover.ts).
import type { Logger } from '../log';

/** What the hand-over needs from the announcer. */
export interface HandingOverDeps {
  resident: boolean;
  /** This executable's build. */
  build: string;
  log: Logger;
  /** Stops listening: new callers start, or find, the next announcer. */
  unlisten(): void;
  /** Whether the file this announcer was started from has been replaced; a throw counts as not replaced. */
  executableReplaced(): boolean;
}

/** Whether this announcer hands over, and the moment it starts to. */
export class HandingOver {
  private started = false;

  constructor(private readonly deps: HandingOverDeps) {}

  /** Whether it hands over: it serves no more. */
  get active(): boolean {
    return this.started;
  }

  /** Serves no more, logging `why` once. */
  start(why: string, fields: Record<string, unknown> = {}): void {
    if (this.started) return;
    this.started = true;
    this.deps.unlisten();
    this.deps.log.info(why, fields);
  }

  /** A command of `build` came: another build, with this executable replaced, is to serve from now on. */
  noteBuild(build: string): void {
    if (this.started || build === this.deps.build || !this.deps.executableReplaced()) return;
    this.start('executable replaced: handing over to the new build', { build: this.deps.build, newBuild: build });
  }

  /**
   * Whether the loop goes on once stopping: a resident announcer (its pod stops) hands over to whichever announcer
   * comes next (a shim starts one).
   */
  onStop(): boolean {
    if (!this.deps.resident) return false;
    this.start('SIGTERM: handing over to the next announcer');
    return true;
  }
}
