import { describe, expect, it } from 'vitest';
import { blockingWaits } from '../../../src/announce/waits';

describe('blockingWaits', () => {
  it('waits in poll(2) on the fds for the ms given, then resolves', async () => {
    const polls: string[] = [];
    const waits = blockingWaits({ pollIn: (fds, ms) => (polls.push(`${fds.join(',')} ${ms}`), fds.map(() => false)) });
    const waiting = waits.readable([50, 51], 250);
    expect(polls).toEqual(['50,51 250']); // the wait happened before the promise was returned: it blocked
    await expect(waiting).resolves.toBeUndefined();
  });

  it('rejects when poll(2) fails', async () => {
    const waits = blockingWaits({
      pollIn: () => {
        throw new Error('poll: EBADF');
      },
    });
    await expect(waits.readable([99], 10)).rejects.toThrow('poll: EBADF');
  });
});
