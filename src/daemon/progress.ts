// Pure: where an attachment's burst stands at a given time.

/**
 * How late a round of a job ADD just left, or of a burst another announcer handed
 * over, may still go out (ADD's end, or the change of announcers, may come after
 * it fell due); an older one is skipped, never sent late in a burst.
 */
export const LATE_GRACE_MS = 1000;

/**
 * The next round at `now` from round `from` on, skipping those due over `graceMs` ago (index schedule.length: none
 * left); recovered work has no grace.
 */
export function nextRound(
  schedule: readonly number[],
  firstRoundAt: number,
  from: number,
  now: number,
  graceMs = LATE_GRACE_MS,
): { index: number; dueAt: number | undefined; skipped: number } {
  let index = Math.max(from, 1);
  let skipped = 0;
  while (index < schedule.length && firstRoundAt + schedule[index]! < now - graceMs) {
    index++;
    skipped++;
  }
  return { index, dueAt: index < schedule.length ? firstRoundAt + schedule[index]! : undefined, skipped };
}
