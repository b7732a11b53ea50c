import { describe, expect, it } from 'vitest';
import { sleepUntilSignal, type SleepDeps, type StopSignal } from '../../../src/commands/sleep';

function fakeProcess() {
  const handlers = new Map<StopSignal, () => void>();
  const held = { count: 0 };
  const deps: SleepDeps = {
    onSignal: (signal, handler) => handlers.set(signal, handler),
    keepAlive: () => {
      held.count += 1;
      return () => {
        held.count -= 1;
      };
    },
  };
  return { deps, handlers, held };
}

describe('sleepUntilSignal', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('holds the process until %s, then lets go', async (signal) => {
    const p = fakeProcess();
    let result: StopSignal | undefined;
    const sleeping = sleepUntilSignal(p.deps).then((s) => (result = s));
    await Promise.resolve();
    expect(result).toBeUndefined();
    expect(p.held.count).toBe(1);
    expect([...p.handlers.keys()].sort()).toEqual(['SIGINT', 'SIGTERM']);
    p.handlers.get(signal)!();
    await sleeping;
    expect(result).toBe(signal);
    expect(p.held.count).toBe(0);
  });

  it('releases once when both signals arrive', async () => {
    const p = fakeProcess();
    const sleeping = sleepUntilSignal(p.deps);
    p.handlers.get('SIGTERM')!();
    p.handlers.get('SIGINT')!();
    expect(await sleeping).toBe('SIGTERM');
    expect(p.held.count).toBe(0);
  });
});
