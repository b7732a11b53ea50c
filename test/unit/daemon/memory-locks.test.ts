// The announcer's attachment locks: one holder per key, waiters handed the lock in order when it
// is released (no polling), a waiter past its timeout gone from the queue.
import { describe, expect, it } from 'vitest';
import { MemoryLocks } from '../../../src/daemon/memory-locks';
import { settle } from '../../support/manual-timers';

/** Locks whose timeouts fire only when the test says. */
function locks() {
  const timeouts: { ms: number; fire: () => void }[] = [];
  const table = new MemoryLocks((ms) => new Promise((resolve) => timeouts.push({ ms, fire: resolve })));
  return { table, timeouts };
}

describe('MemoryLocks', () => {
  it('gives a free key at once, refuses a held one with no wait, and frees it on release', async () => {
    const { table } = locks();
    const a = await table.take('/s/c1@eth0.lock', 0);
    expect(a).toBeDefined();
    expect(await table.take('/s/c1@eth0.lock', 0)).toBeUndefined();
    expect(await table.take('/s/c2@eth0.lock', 0)).toBeDefined();
    a!.release();
    a!.release(); // twice: no effect
    expect(await table.take('/s/c1@eth0.lock', 0)).toBeDefined();
  });

  it('hands the lock to the waiters in order as each holder releases it, without any timer firing', async () => {
    const { table, timeouts } = locks();
    const first = await table.take('k', 0);
    const order: string[] = [];
    const second = table.take('k', 1000).then((l) => (order.push('second'), l));
    const third = table.take('k', 1000).then((l) => (order.push('third'), l));
    await settle();
    expect(order).toEqual([]);
    first!.release();
    (await second)!.release();
    expect(await third).toBeDefined();
    expect(order).toEqual(['second', 'third']);
    expect(timeouts.map((t) => t.ms)).toEqual([1000, 1000]);
  });

  const waiterWhoseTimeoutTitle =
    'a waiter whose timeout passes gets undefined and leaves the queue; the next one still gets the lock';
  it(waiterWhoseTimeoutTitle, async () => {
    const { table, timeouts } = locks();
    const holder = await table.take('k', 0);
    const late = table.take('k', 100);
    const patient = table.take('k', 5000);
    await settle();
    timeouts[0]!.fire();
    expect(await late).toBeUndefined();
    holder!.release();
    expect(await patient).toBeDefined();
    expect(await table.take('k', 0)).toBeUndefined();
  });

  const handedTitle =
    'a waiter handed the lock before its timeout keeps its place when the timeout fires: the queue behind it stays';
  it(handedTitle, async () => {
    const { table, timeouts } = locks();
    const holder = await table.take('k', 0);
    const second = table.take('k', 1000);
    const third = table.take('k', 1000);
    await settle();
    holder!.release();
    const got = await second;
    timeouts[0]!.fire(); // the second's timeout, after it took the lock: nothing to undo
    await settle();
    got!.release();
    expect(await third).toBeDefined();
  });
});
