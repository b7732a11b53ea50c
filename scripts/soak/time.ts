// Pauses of the soak's own loops (the load and the chaos schedule), cut short when the run is aborted.
import { setTimeout as sleep } from 'node:timers/promises';

/** Waits `ms`, or less once `signal` aborts; never rejects. */
export async function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return;
  await sleep(ms, undefined, signal ? { signal } : {}).catch(() => undefined);
}

/** Calls `check` every `everyMs` until it returns true or `boundMs` has passed; resolves with its last answer. */
export async function pollUntil(
  check: () => Promise<boolean> | boolean,
  boundMs: number,
  everyMs = 50,
  signal?: AbortSignal,
): Promise<boolean> {
  const until = Date.now() + boundMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= until || signal?.aborted) return false;
    await pause(everyMs, signal);
  }
}
