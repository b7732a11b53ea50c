import { describe, expect, it } from 'vitest';
import { firstWaits, refill, takeOnCredit, tryTake, tryTakeLater } from '../../../src/announce/budget';

const LIMIT = { framesPerSecond: 10, burst: 5 };

describe('token bucket', () => {
  it('starts full and refills at framesPerSecond up to burst', () => {
    expect(refill(undefined, LIMIT, 1000)).toEqual({ tokens: 5, atMs: 1000 });
    expect(refill({ tokens: 0, atMs: 1000 }, LIMIT, 1200)).toEqual({ tokens: 2, atMs: 1200 });
    expect(refill({ tokens: 4, atMs: 1000 }, LIMIT, 9000)).toEqual({ tokens: 5, atMs: 9000 });
  });

  it('takes what is there and says how long to wait for the rest', () => {
    const first = tryTake(undefined, LIMIT, 3, 0);
    expect(first).toEqual({ ok: true, bucket: { tokens: 2, atMs: 0 } });
    const second = tryTake({ tokens: 2, atMs: 0 }, LIMIT, 3, 0);
    expect(second).toEqual({ ok: false, waitMs: 100 }); // one token at 10/s
    expect(tryTake({ tokens: 2, atMs: 0 }, LIMIT, 3, 100)).toEqual({ ok: true, bucket: { tokens: 0, atMs: 100 } });
  });

  it('lets a round larger than the burst go once the bucket is full, on credit', () => {
    expect(tryTake({ tokens: 4, atMs: 0 }, LIMIT, 8, 0)).toEqual({ ok: false, waitMs: 100 });
    expect(tryTake({ tokens: 4, atMs: 0 }, LIMIT, 8, 100)).toEqual({ ok: true, bucket: { tokens: -3, atMs: 100 } });
  });

  it('sends on credit when told to, and later takes wait for the debt', () => {
    const credit = takeOnCredit({ tokens: 1, atMs: 0 }, LIMIT, 4, 0);
    expect(credit).toEqual({ tokens: -3, atMs: 0 });
    expect(tryTake(credit, LIMIT, 1, 0)).toEqual({ ok: false, waitMs: 400 });
  });

  it('never runs backwards when the clock reads earlier than the bucket', () => {
    expect(refill({ tokens: 1, atMs: 500 }, LIMIT, 400)).toEqual({ tokens: 1, atMs: 500 });
  });

  it('a later round holds back while a round 1 waits, then takes as any round does', () => {
    const waiting = firstWaits({ tokens: 0, atMs: 0 }, LIMIT, 0, 100);
    expect(waiting).toEqual({ tokens: 0, atMs: 0, firstWaitsUntil: 150 });
    expect(tryTakeLater(waiting, LIMIT, 1, 120)).toEqual({ ok: false, waitMs: 30 });
    const first = tryTake(waiting, LIMIT, 1, 120);
    expect(first).toMatchObject({ ok: true, bucket: { atMs: 120, firstWaitsUntil: 150 } });
    expect(first.ok && first.bucket.tokens).toBeCloseTo(0.2);
    expect(tryTakeLater(waiting, LIMIT, 1, 150)).toEqual({ ok: true, bucket: { tokens: 0.5, atMs: 150 } });
  });

  it('keeps the latest end of the round 1 waits', () => {
    const one = firstWaits(undefined, LIMIT, 0, 300);
    expect(firstWaits(one, LIMIT, 10, 100).firstWaitsUntil).toBe(350);
    expect(firstWaits(one, LIMIT, 10, 400).firstWaitsUntil).toBe(460);
  });
});

describe('token bucket edges', () => {
  it('a later round takes from a missing bucket as from a full one', () => {
    expect(tryTakeLater(undefined, LIMIT, 2, 7)).toEqual({ ok: true, bucket: { tokens: 3, atMs: 7 } });
  });

  it('forgets a round 1 wait that has ended, and keeps one that has not', () => {
    expect(refill({ tokens: 1, atMs: 0, firstWaitsUntil: 100 }, LIMIT, 100)).toStrictEqual({ tokens: 2, atMs: 100 });
    expect(refill({ tokens: 1, atMs: 0, firstWaitsUntil: 101 }, LIMIT, 100)).toStrictEqual({
      tokens: 2,
      atMs: 100,
      firstWaitsUntil: 101,
    });
  });
});
