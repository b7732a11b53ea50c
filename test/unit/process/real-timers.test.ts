import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { realTimers } from '../../../src/process/real-timers';

// The process's one real clock and sleep, on vitest's fake clock (hrtime included).
describe('realTimers', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'hrtime'] }));
  afterEach(() => vi.useRealTimers());

  it('reads the monotonic clock in milliseconds, and the boot clock it is given', () => {
    const timers = realTimers(() => 123_456);
    const start = timers.now();
    vi.advanceTimersByTime(1500);
    expect(timers.now() - start).toBe(1500);
    expect(timers.bootMs()).toBe(123_456);
  });

  it('sleeps for the time asked', async () => {
    const timers = realTimers(() => 0);
    let woke = false;
    const sleeping = timers.sleep(200).then(() => (woke = true));
    await vi.advanceTimersByTimeAsync(199);
    expect(woke).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await sleeping;
    expect(woke).toBe(true);
  });
});
