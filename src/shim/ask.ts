// A control request to the node's announcer (status, handover, ...), over the shim's
// transport and exchange.
import type { ShimDeps } from './shim';
import { startAndRetry, wantsStart } from './shim';

/** How long a control request waits for its answer. */
export const CONTROL_WAIT_MS = 1000;

/** How to ask: whether to start an absent announcer, and how long to wait for one that starts. */
export interface AskOptions {
  start: boolean;
  timeoutMs: number;
}

/** The announcer's answer to `control`, or undefined when none came (absent, hung, dropped, refused). */
export async function askAnnouncer(
  stateDir: string,
  control: Record<string, unknown>,
  options: AskOptions,
  deps?: ShimDeps,
): Promise<unknown> {
  const d = deps ?? (await defaultDeps());
  const body = { control };
  // A control request is answered at once; the wait covers a loop busy with a turn.
  let outcome = await d.exchange(stateDir, body, Math.max(options.timeoutMs, CONTROL_WAIT_MS));
  if (options.start && wantsStart(outcome)) {
    const retried = await startAndRetry(d, stateDir, body, CONTROL_WAIT_MS);
    if (typeof retried === 'string' || retried instanceof Error) return undefined;
    outcome = retried;
  }
  return 'control' in outcome ? outcome.control : undefined;
}

/** This process's ShimDeps, loaded on the first ask. */
async function defaultDeps(): Promise<ShimDeps> {
  const [{ realShimDeps }, { BUILD_ID }, { readText }] = await Promise.all([
    import('./shim-deps'),
    import('../build-id'),
    import('../sys/stdio'),
  ]);
  return realShimDeps(BUILD_ID, readText);
}
