// askAnnouncer: a control request, its answer, and when it starts an announcer.
import { describe, expect, it } from 'vitest';
import { askAnnouncer } from '../../../src/shim/ask';
import type { Outcome } from '../../../src/shim/exchange';
import type { ShimDeps } from '../../../src/shim/shim';
import { fakeClock } from './fakes';

function deps(outcomes: Outcome[]) {
  const sent: unknown[] = [];
  const starts: string[] = [];
  const d: ShimDeps = {
    clock: fakeClock(),
    announcerPid: async () => undefined,
    replaceHung: async () => expect.fail('no request of these hangs'),
    exchange: async (stateDir, body) => {
      sent.push({ stateDir, body });
      return outcomes[Math.min(sent.length - 1, outcomes.length - 1)]!;
    },
    start: async (stateDir) => (starts.push(stateDir), 'starting'),
  };
  return { d, sent, starts };
}

describe('askAnnouncer', { timeout: 5000 }, () => {
  it("sends { control } and resolves with the announcer's value", async () => {
    const { d, sent } = deps([{ control: { jobs: 1 } }]);
    expect(await askAnnouncer('/s', { op: 'status' }, { start: false, timeoutMs: 100 }, d)).toEqual({ jobs: 1 });
    expect(sent).toEqual([{ stateDir: '/s', body: { control: { op: 'status' } } }]);
  });

  it('resolves undefined, starting nothing, when asked not to start one', async () => {
    const { d, starts } = deps([{ unreachable: 'ENOENT' }]);
    expect(await askAnnouncer('/s', { op: 'status' }, { start: false, timeoutMs: 100 }, d)).toBeUndefined();
    expect(starts).toEqual([]);
  });

  it('starts an absent announcer when asked to, then asks again', async () => {
    const { d, starts } = deps([{ unreachable: 'ENOENT' }, { control: 'ok' }]);
    expect(await askAnnouncer('/s', { op: 'status' }, { start: true, timeoutMs: 100 }, d)).toBe('ok');
    expect(starts).toEqual(['/s']);
  });

  it('resolves undefined for a hung, dropped or refused announcer', async () => {
    for (const o of [{ hung: true }, { dropped: true }, { refused: 'version' }] as Outcome[]) {
      expect(await askAnnouncer('/s', { op: 'status' }, { start: true, timeoutMs: 100 }, deps([o]).d)).toBeUndefined();
    }
  });
});
