import { describe, expect, it } from 'vitest';
import { LATE_GRACE_MS, nextRound } from '../../../src/daemon/progress';

const SCHEDULE = [0, 1000, 2000, 4000];

describe('nextRound', () => {
  it('starts at round 2 (index 1): ADD sent round 1', () => {
    expect(nextRound(SCHEDULE, 10_000, 0, 10_000)).toEqual({ index: 1, dueAt: 11_000, skipped: 0 });
  });

  it('sends a round that is late by less than the grace', () => {
    expect(nextRound(SCHEDULE, 10_000, 1, 11_000 + LATE_GRACE_MS)).toEqual({ index: 1, dueAt: 11_000, skipped: 0 });
  });

  it('skips rounds whose time has passed, never sending them late in a burst', () => {
    expect(nextRound(SCHEDULE, 10_000, 1, 13_500)).toEqual({ index: 3, dueAt: 14_000, skipped: 2 });
  });

  it('says the burst is over when no round is left', () => {
    expect(nextRound(SCHEDULE, 10_000, 4, 10_000)).toEqual({ index: 4, dueAt: undefined, skipped: 0 });
    expect(nextRound(SCHEDULE, 10_000, 1, 60_000)).toEqual({ index: 4, dueAt: undefined, skipped: 3 });
  });
});
