// Sending on ADD's behalf within the node-wide frame budget: round 1 and the
// gateway check's requests are never dropped; they wait for tokens until a
// deadline, then go on credit.
import type { AddDeps } from './announce-on-add';

/**
 * Sends `frames` frames through `send` once the node-wide budget has them, waiting until `deadline` (monotonic ms) at
 * the latest, then on credit: what ADD sends is never dropped. `what` names it in the log.
 */
export async function sendWithinBudget<T>(
  deps: Pick<AddDeps, 'budget' | 'timers' | 'log'>,
  frames: number,
  deadline: number,
  send: () => T,
  what: string,
): Promise<T> {
  let sent: T | undefined;
  let waited = false;
  for (;;) {
    const now = deps.timers.now();
    const taken = await deps.budget.take(
      frames,
      () => deps.timers.bootMs(),
      now >= deadline,
      () => (sent = send()),
    );
    if (taken.ok) return sent as T;
    if (!waited) deps.log.info(`node-wide rate limit: ${what} waits its turn`, { waitMs: taken.waitMs });
    waited = true;
    await deps.timers.sleep(Math.min(taken.waitMs, Math.max(0, deadline - now)));
  }
}
