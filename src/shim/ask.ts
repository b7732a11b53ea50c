// A control request to the node's announcer (status, handover), over the shim's transport and
// exchange. It never starts one: a control request asks the announcer that runs.
import type { ShimDeps } from './shim';

/** How long a control request waits for its answer: it is answered at once; the wait covers a loop busy with a turn. */
export const CONTROL_WAIT_MS = 1000;

/** The announcer's answer to `control`, or undefined when none came (absent, hung, closed, refused). */
export async function askAnnouncer(
  stateDir: string,
  control: Record<string, unknown>,
  deps?: Pick<ShimDeps, 'exchange'>,
): Promise<unknown> {
  const d = deps ?? (await defaultDeps());
  const outcome = await d.exchange(stateDir, { control }, CONTROL_WAIT_MS);
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
