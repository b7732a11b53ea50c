// The node-wide frame budget (budget.ts): the announcer's one token bucket, as round 1s and later rounds take from it,
// and the bucket's pure arithmetic.
import { describe, expect, it } from 'vitest';
import {
  firstWaits,
  NodeFrameBudget,
  refill,
  takeOnCredit,
  tryTake,
  tryTakeLater,
  type RateLimit,
} from '../../../src/announce/budget';

const LIMIT = { framesPerSecond: 10, burst: 5 };

describe('NodeFrameBudget', () => {
  it('takes tokens from its one bucket, and says how long to wait once they are gone', () => {
    const { first } = new NodeFrameBudget(() => LIMIT);
    expect(first.take(5, 0)).toEqual({ ok: true });
    expect(first.take(1, 0)).toEqual({ ok: false, waitMs: 100 });
    expect(first.take(1, 100)).toEqual({ ok: true });
  });

  it('round 1s and later rounds draw from the same bucket; while a round 1 waits, later rounds wait too', () => {
    const { first, later } = new NodeFrameBudget(() => LIMIT);
    expect(later.take(4, 0)).toEqual({ ok: true });
    expect(first.take(1, 0)).toEqual({ ok: true }); // the fifth token: the bucket is shared
    expect(first.take(1, 0)).toEqual({ ok: false, waitMs: 100 }); // back by 150 at the latest
    expect(later.take(1, 120)).toEqual({ ok: false, waitMs: 30 }); // round 1 goes first
    expect(first.take(1, 120)).toEqual({ ok: true });
    expect(later.take(1, 160)).toEqual({ ok: false, waitMs: 40 }); // the token is gone
    expect(later.take(1, 200)).toEqual({ ok: true });
  });

  it('on credit, takes the frames whatever is left, and the next take waits for the debt', () => {
    const { first } = new NodeFrameBudget(() => LIMIT);
    first.take(4, 0);
    expect(first.take(3, 0, true)).toEqual({ ok: true });
    expect(first.take(1, 0)).toEqual({ ok: false, waitMs: 300 }); // 1 token to reach from -2
  });

  it('reads the node limit at each take: none means unlimited', () => {
    let limit: RateLimit | undefined;
    const { later } = new NodeFrameBudget(() => limit);
    for (let i = 0; i < 20; i++) expect(later.take(5, 0)).toEqual({ ok: true });
    limit = LIMIT;
    expect(later.take(5, 0)).toEqual({ ok: true });
    expect(later.take(1, 0)).toMatchObject({ ok: false });
  });
});

describe('token bucket', () => {
  it.each([
    ['starts full', undefined, 1000, { tokens: 5, atMs: 1000 }],
    ['refills at framesPerSecond', { tokens: 0, atMs: 1000 }, 1200, { tokens: 2, atMs: 1200 }],
    ['never above burst', { tokens: 4, atMs: 1000 }, 9000, { tokens: 5, atMs: 9000 }],
    ['never runs backwards when the clock reads earlier', { tokens: 1, atMs: 500 }, 400, { tokens: 1, atMs: 500 }],
    [
      'forgets a round 1 wait that has ended',
      { tokens: 1, atMs: 0, firstWaitsUntil: 100 },
      100,
      { tokens: 2, atMs: 100 },
    ],
    [
      'keeps a round 1 wait that has not ended',
      { tokens: 1, atMs: 0, firstWaitsUntil: 101 },
      100,
      { tokens: 2, atMs: 100, firstWaitsUntil: 101 },
    ],
  ])('%s', (_what, bucket, now, refilled) => {
    expect(refill(bucket, LIMIT, now)).toStrictEqual(refilled);
  });

  it('takes what is there and says how long to wait for the rest', () => {
    expect(tryTake(undefined, LIMIT, 3, 0)).toEqual({ ok: true, bucket: { tokens: 2, atMs: 0 } });
    expect(tryTake({ tokens: 2, atMs: 0 }, LIMIT, 3, 0)).toEqual({ ok: false, waitMs: 100 }); // one token at 10/s
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

  it('a later round holds back while a round 1 waits, then takes as any round does', () => {
    const waiting = firstWaits({ tokens: 0, atMs: 0 }, LIMIT, 0, 100);
    expect(waiting).toEqual({ tokens: 0, atMs: 0, firstWaitsUntil: 150 });
    expect(tryTakeLater(waiting, LIMIT, 1, 120)).toEqual({ ok: false, waitMs: 30 });
    const first = tryTake(waiting, LIMIT, 1, 120);
    expect(first).toMatchObject({ ok: true, bucket: { atMs: 120, firstWaitsUntil: 150 } });
    expect(first.ok && first.bucket.tokens).toBeCloseTo(0.2);
    expect(tryTakeLater(waiting, LIMIT, 1, 150)).toEqual({ ok: true, bucket: { tokens: 0.5, atMs: 150 } });
    // a missing bucket is full
    expect(tryTakeLater(undefined, LIMIT, 2, 7)).toEqual({ ok: true, bucket: { tokens: 3, atMs: 7 } });
  });

  it('keeps the latest end of the round 1 waits', () => {
    const one = firstWaits(undefined, LIMIT, 0, 300);
    expect(firstWaits(one, LIMIT, 10, 100).firstWaitsUntil).toBe(350);
    expect(firstWaits(one, LIMIT, 10, 400).firstWaitsUntil).toBe(460);
  });
});
