import { describe, expect, it } from 'vitest';
import { NodeFrameBudget } from '../../../src/announce/budget';
import type { RateLimit } from '../../../src/announce/budget';

const LIMIT = { framesPerSecond: 10, burst: 5 };

describe('the node frame budget (the announcer’s memory)', () => {
  const counting = () => {
    const sends = { n: 0 };
    return { sends, send: (): void => void sends.n++ };
  };

  it('takes tokens from its one bucket, and says how long to wait once they are gone, sending nothing', async () => {
    const { sends, send } = counting();
    const budget = new NodeFrameBudget(() => LIMIT).budget('first');
    expect(await budget.take(5, () => 0, false, send)).toEqual({ ok: true });
    expect(await budget.take(1, () => 0, false, send)).toEqual({ ok: false, waitMs: 100 });
    expect(sends.n).toBe(1); // only what was taken was sent
    expect(await budget.take(1, () => 100, false, send)).toEqual({ ok: true });
    expect(sends.n).toBe(2);
  });

  it('round 1s and later rounds draw from the same bucket; while a round 1 waits, later rounds wait too', async () => {
    const { send } = counting();
    const node = new NodeFrameBudget(() => LIMIT);
    const first = node.budget('first');
    const later = node.budget('later');
    expect(await first.take(5, () => 0, false, send)).toEqual({ ok: true });
    expect(await first.take(1, () => 0, false, send)).toEqual({ ok: false, waitMs: 100 }); // back by 150 at the latest
    expect(await later.take(1, () => 120, false, send)).toEqual({ ok: false, waitMs: 30 }); // round 1 goes first
    expect(await first.take(1, () => 120, false, send)).toEqual({ ok: true });
    expect(await later.take(1, () => 160, false, send)).toEqual({ ok: false, waitMs: 40 }); // the token is gone
    expect(await later.take(1, () => 200, false, send)).toEqual({ ok: true });
  });

  it('two budgets of one node share its tokens: the second finds the bucket the first emptied', async () => {
    const { send } = counting();
    const node = new NodeFrameBudget(() => LIMIT);
    expect(await node.budget('later').take(5, () => 0, false, send)).toEqual({ ok: true });
    expect(await node.budget('later').take(1, () => 0, false, send)).toEqual({ ok: false, waitMs: 100 });
  });

  it('on credit, takes the frames whatever is left, and the next take waits for the debt', async () => {
    const { sends, send } = counting();
    const budget = new NodeFrameBudget(() => LIMIT).budget('first');
    await budget.take(4, () => 0, false, send);
    expect(await budget.take(3, () => 0, true, send)).toEqual({ ok: true });
    expect(sends.n).toBe(2);
    expect(await budget.take(1, () => 0, false, send)).toEqual({ ok: false, waitMs: 300 }); // 1 token to reach from -2
  });

  it('reads the node limit at each take: none means unlimited', async () => {
    const { sends, send } = counting();
    let limit: RateLimit | undefined;
    const node = new NodeFrameBudget(() => limit);
    for (let i = 0; i < 20; i++) expect(await node.budget('later').take(5, () => 0, false, send)).toEqual({ ok: true });
    expect(sends.n).toBe(20);
    limit = LIMIT;
    expect(await node.budget('later').take(5, () => 0, false, send)).toEqual({ ok: true });
    expect(await node.budget('later').take(1, () => 0, false, send)).toMatchObject({ ok: false });
  });
});
