// What a command runs on (context.ts): blocking waits for `announcer announce`, and how long a command waits for an
// attachment's lock.
import { describe, expect, it } from 'vitest';
import { blockingWaits, lockWaitMs } from '../../../src/announce/context';
import { fakeLibc } from '../../support/fake-libc';

describe('blockingWaits', () => {
  it('waits in poll(2) on the fds for the ms given, then resolves', async () => {
    const polls: string[] = [];
    const waits = blockingWaits(
      fakeLibc({ pollIn: (fds, ms) => (polls.push(`${fds.join(',')} ${ms}`), fds.map(() => false)) }),
    );
    const waiting = waits.readable([50, 51], 250);
    expect(polls).toEqual(['50,51 250']); // the wait happened before the promise was returned: it blocked
    await expect(waiting).resolves.toBeUndefined();
  });

  it('rejects when poll(2) fails', async () => {
    const waits = blockingWaits(
      fakeLibc({
        pollIn: () => {
          throw new Error('poll: EBADF');
        },
      }),
    );
    await expect(waits.readable([99], 10)).rejects.toThrow('poll: EBADF');
  });
});

describe('lockWaitMs', () => {
  it(
    'waits past the longest an ADD may hold the lock ' + '(addWaitMs, the largest probe and gateway wait), plus 10 s',
    () => {
      // An ADD that is not stuck never makes a waiter give up: readiness, probeMs 2 s, gatewayCheck require 10 s.
      expect(lockWaitMs(2000)).toBe(2000 + 2000 + 10_000 + 10_000);
      expect(lockWaitMs(0)).toBe(22_000);
    },
  );
});
