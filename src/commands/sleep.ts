// `announcer sleep`: the DaemonSet's long-running container once the init
// container has installed the plugin. It does nothing until it is told to stop.

/** The verb that selects this command on the command line. */
export const SLEEP_VERB = 'sleep';

/** The signals that end the sleep (kubelet sends SIGTERM; Ctrl-C sends SIGINT). */
export const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** One of STOP_SIGNALS. */
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** What the sleep needs from the process. */
export interface SleepDeps {
  /** Calls handler once when the signal arrives. As PID 1 of a container, a signal without a handler is ignored. */
  onSignal(signal: StopSignal, handler: () => void): void;
  /** Keeps the process alive (one idle timer) until the returned function is called. */
  keepAlive(): () => void;
}

/** Resolves with the first stop signal received; until then holds one idle timer and does no work. */
export function sleepUntilSignal(deps: SleepDeps): Promise<StopSignal> {
  return new Promise((resolve) => {
    const release = deps.keepAlive();
    let done = false;
    for (const signal of STOP_SIGNALS) {
      deps.onSignal(signal, () => {
        if (done) return;
        done = true;
        release();
        resolve(signal);
      });
    }
  });
}
