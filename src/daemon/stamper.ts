// The announcer's progress stamp, from its loop: a loop that turns is not hung
// (a call may replace one whose stamp is old: src/shim/replace-hung.ts).

/** The loop stamps its progress on its lock file at most this often (its turns are at most CHECK_MS apart). */
export const STAMP_MS = 1000;

/** A function for each loop turn that calls `stamp` at most once per STAMP_MS of `now` (monotonic ms). */
export function stamper(now: () => number, stamp: () => void): () => void {
  let stampedAt = -Infinity;
  return () => {
    const at = now();
    if (at - stampedAt < STAMP_MS) return;
    stampedAt = at;
    stamp();
  };
}
