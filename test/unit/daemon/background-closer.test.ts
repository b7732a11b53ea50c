// Background closes: at most `limit` in flight, the rest wait their turn in
// order; a close koffi refuses, or one that fails, is reported, never thrown.
import { describe, expect, it } from 'vitest';
import { BackgroundCloser, MAX_CLOSES_IN_FLIGHT } from '../../../src/daemon/background-closer';

/** Close calls whose background completions the test releases by hand. */
function calls() {
  const inFlight: { fd: number; done: (error?: unknown) => void }[] = [];
  const closedNow: number[] = [];
  const failures: [number, unknown][] = [];
  let refuse: Error | undefined;
  let failNow: Error | undefined;
  return {
    inFlight,
    closedNow,
    failures,
    refuseWith: (err: Error | undefined) => void (refuse = err),
    failNowWith: (err: Error | undefined) => void (failNow = err),
    closer: (limit?: number) =>
      new BackgroundCloser(
        {
          closeInBackground: (fd, done) => {
            if (refuse) throw refuse;
            inFlight.push({ fd, done });
          },
          close: (fd) => {
            if (failNow) throw failNow;
            closedNow.push(fd);
          },
        },
        (fd, error) => void failures.push([fd, error]),
        limit,
      ),
  };
}

describe('BackgroundCloser', () => {
  it('has at most `limit` closes in flight; the others wait and are issued in order as closes complete', () => {
    const c = calls();
    const closer = c.closer(2);
    for (const fd of [10, 11, 12, 13]) closer.close(fd);
    expect(c.inFlight.map((x) => x.fd)).toEqual([10, 11]);
    expect(closer.pending).toBe(4);
    c.inFlight.shift()!.done();
    expect(c.inFlight.map((x) => x.fd)).toEqual([11, 12]);
    expect(closer.pending).toBe(3);
    c.inFlight.shift()!.done();
    c.inFlight.shift()!.done();
    expect(c.inFlight.map((x) => x.fd)).toEqual([13]);
    c.inFlight.shift()!.done();
    expect({ pending: closer.pending, failures: c.failures, closedNow: c.closedNow }).toEqual({
      pending: 0,
      failures: [],
      closedNow: [],
    });
  });

  it('defaults to 32 in flight, well under the 256 async calls koffi queues', () => {
    const c = calls();
    const closer = c.closer();
    for (let fd = 100; fd < 400; fd++) closer.close(fd);
    expect(MAX_CLOSES_IN_FLIGHT).toBe(32);
    expect(c.inFlight).toHaveLength(32);
    expect(closer.pending).toBe(300);
  });

  it('reports a close that failed on its worker thread, and goes on with the next', () => {
    const c = calls();
    const closer = c.closer(1);
    closer.close(10);
    closer.close(11);
    const err = new Error('EIO');
    c.inFlight.shift()!.done(err);
    expect(c.failures).toEqual([[10, err]]);
    expect(c.inFlight.map((x) => x.fd)).toEqual([11]);
  });

  const closesOnThisTitle =
    'closes on this thread when koffi refuses the async call, reporting the ' +
    'refusal; a failing close is reported, not thrown';
  it(closesOnThisTitle, () => {
    const c = calls();
    const closer = c.closer(4);
    const full = new Error('too many async calls');
    c.refuseWith(full);
    closer.close(10);
    expect({ closedNow: c.closedNow, failures: c.failures, pending: closer.pending }).toEqual({
      closedNow: [10],
      failures: [[10, full]],
      pending: 0,
    });
    const ebadf = new Error('EBADF');
    c.failNowWith(ebadf);
    expect(() => closer.close(11)).not.toThrow();
    expect(c.failures).toEqual([
      [10, full],
      [11, full],
      [11, ebadf],
    ]);
    // The refused calls did not stay counted as in flight.
    c.refuseWith(undefined);
    c.failNowWith(undefined);
    for (const fd of [20, 21, 22, 23]) closer.close(fd);
    expect(c.inFlight.map((x) => x.fd)).toEqual([20, 21, 22, 23]);
  });

  it('closeWaiting closes every waiting fd on this thread and leaves those in flight alone', () => {
    const c = calls();
    const closer = c.closer(1);
    for (const fd of [10, 11, 12]) closer.close(fd);
    closer.closeWaiting();
    expect({ closedNow: c.closedNow, inFlight: c.inFlight.map((x) => x.fd), pending: closer.pending }).toEqual({
      closedNow: [11, 12],
      inFlight: [10],
      pending: 1,
    });
    c.inFlight.shift()!.done();
    expect({ inFlight: c.inFlight.length, pending: closer.pending }).toEqual({ inFlight: 0, pending: 0 });
  });
});
