// Pure: where an attachment's burst stands at a given time.

/** How late a round may still go out; an older one is skipped, never sent late in a burst. */
export const LATE_GRACE_MS = 1000;

/**
 * The next round to send at `now` for a burst whose round 1 went out at
 * `firstRoundAt` (boot clock), starting the search at round `from`: rounds due
 * more than LATE_GRACE_MS ago are skipped. `index` equals schedule.length when
 * nothing is left.
 */
export function nextRound(
  schedule: readonly number[],
  firstRoundAt: number,
  from: number,
  now: number,
): { index: number; dueAt: number | undefined; skipped: number } {
  let index = Math.max(from, 1);
  let skipped = 0;
  while (index < schedule.length && firstRoundAt + schedule[index]! < now - LATE_GRACE_MS) {
    index++;
    skipped++;
  }
  return { index, dueAt: index < schedule.length ? firstRoundAt + schedule[index]! : undefined, skipped };
}
