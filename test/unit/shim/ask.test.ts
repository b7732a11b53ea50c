// askAnnouncer: a control request and its answer; it never starts an announcer.
import { describe, expect, it } from 'vitest';
import { askAnnouncer, CONTROL_WAIT_MS } from '../../../src/shim/ask';
import type { Outcome } from '../../../src/shim/exchange';
import type { RequestBody } from '../../../src/shim/wire';

function deps(outcome: Outcome) {
  const sent: { stateDir: string; body: RequestBody; waitMs: number }[] = [];
  const exchange = async (stateDir: string, body: RequestBody, waitMs: number): Promise<Outcome> => {
    sent.push({ stateDir, body, waitMs });
    return outcome;
  };
  return { d: { exchange }, sent };
}

describe('askAnnouncer', { timeout: 5000 }, () => {
  it("sends { control }, waits CONTROL_WAIT_MS, and resolves with the announcer's value", async () => {
    const { d, sent } = deps({ control: { jobs: 1 } });
    expect(await askAnnouncer('/s', { op: 'status' }, d)).toEqual({ jobs: 1 });
    expect(sent).toEqual([{ stateDir: '/s', body: { control: { op: 'status' } }, waitMs: CONTROL_WAIT_MS }]);
  });

  it('resolves undefined, once, for an absent, hung, closed, reset or refusing announcer', async () => {
    const outcomes: Outcome[] = [
      { unreachable: 'ENOENT' },
      { hung: true },
      { closed: true },
      { reset: true },
      { refused: 'handover' },
    ];
    for (const o of outcomes) {
      const { d, sent } = deps(o);
      expect(await askAnnouncer('/s', { op: 'status' }, d)).toBeUndefined();
      expect(sent).toHaveLength(1);
    }
  });
});
