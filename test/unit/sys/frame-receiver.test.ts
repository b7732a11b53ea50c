import { describe, expect, it } from 'vitest';
import { frameReceiver, readFrames } from '../../../src/sys/frame-receiver';
import { fakeLibc } from '../../support/fake-libc';

/** A Libc whose recv hands out the queued frames of each fd, and whose poll reports the fds with frames. */
function queueLibc(queues: Map<number, Buffer[]>) {
  const polls: { fds: number[]; timeoutMs: number }[] = [];
  const closes: number[] = [];
  const libc = fakeLibc({
    pollIn: (fds, timeoutMs) => {
      polls.push({ fds: [...fds], timeoutMs });
      return fds.map((fd) => (queues.get(fd)?.length ?? 0) > 0);
    },
    recvNow: (fd, buf) => {
      const next = queues.get(fd)?.shift();
      if (!next) return undefined;
      buf.set(next);
      return next.length;
    },
    close: (fd) => void closes.push(fd),
  });
  return { libc, polls, closes };
}

describe('readFrames', () => {
  it('polls every receiver with the timeout and drains each one that is readable', () => {
    const queues = new Map([
      [5, [Buffer.from('aa01', 'hex'), Buffer.from('aa02', 'hex')]],
      [6, []],
      [7, [Buffer.from('bb01', 'hex')]],
    ]);
    const { libc, polls } = queueLibc(queues);
    const receivers = [frameReceiver(libc, 5, 2), frameReceiver(libc, 6, 3), frameReceiver(libc, 7, 4)];
    const frames = readFrames(libc, receivers, 40);
    expect(polls).toEqual([{ fds: [5, 6, 7], timeoutMs: 40 }]);
    expect(frames.map((f) => [f.ifindex, f.frame.toString('hex')])).toEqual([
      [2, 'aa01'],
      [2, 'aa02'],
      [4, 'bb01'],
    ]);
  });

  it('returns nothing when nothing came in time, and does not poll without receivers', () => {
    const { libc, polls } = queueLibc(new Map([[5, []]]));
    expect(readFrames(libc, [frameReceiver(libc, 5, 2)], 10)).toEqual([]);
    expect(readFrames(libc, [], 10)).toEqual([]);
    expect(polls).toHaveLength(1);
  });

  it('reads at most 256 frames per receiver and call, so that a flood cannot hold it', () => {
    const flood = Array.from({ length: 300 }, () => Buffer.from('cc', 'hex'));
    const { libc } = queueLibc(new Map([[5, flood]]));
    const receiver = frameReceiver(libc, 5, 2);
    expect(readFrames(libc, [receiver], 0)).toHaveLength(256);
    expect(readFrames(libc, [receiver], 0)).toHaveLength(44);
  });

  it('returns frames that do not share the read buffer', () => {
    const { libc } = queueLibc(new Map([[5, [Buffer.from('0102', 'hex'), Buffer.from('0304', 'hex')]]]));
    const [a, b] = readFrames(libc, [frameReceiver(libc, 5, 2)], 0);
    expect([a!.frame.toString('hex'), b!.frame.toString('hex')]).toEqual(['0102', '0304']);
  });
});

describe('arpReceiver', () => {
  it('closes once, and refuses reads after close or release', () => {
    const { libc, closes } = queueLibc(new Map());
    const closed = frameReceiver(libc, 5, 2);
    closed.close();
    closed.close();
    expect(closes).toEqual([5]);
    expect(() => closed.receive(Buffer.alloc(60))).toThrow('frame receiver is closed');
    const released = frameReceiver(libc, 6, 3);
    expect(released.release()).toBe(6);
    released.close();
    expect(closes).toEqual([5]);
    expect(() => released.receive(Buffer.alloc(60))).toThrow('frame receiver is closed');
  });
});
