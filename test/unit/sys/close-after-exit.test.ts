import { describe, expect, it } from 'vitest';
import { closeAfterExit } from '../../../src/sys/close-after-exit';
import { fakeLibc } from '../../support/fake-libc';

function recorder() {
  const calls: string[] = [];
  const libc = fakeLibc({
    pipe: () => (calls.push('pipe'), [20, 21]),
    close: (fd) => void calls.push(`close ${fd}`),
  });
  return { calls, libc };
}

describe('closeAfterExit', () => {
  it('hands the pipe read end and the fds to the holder, then closes its own copies, keeping the write end', () => {
    const { calls, libc } = recorder();
    const held = closeAfterExit(libc, (inherit) => void calls.push(`spawn ${inherit.join(',')}`), [7, 9]);
    expect(held).toBe(true);
    expect(calls).toEqual(['pipe', 'spawn 20,7,9', 'close 20', 'close 7', 'close 9']);
  });

  it('closes the fds itself when no holder can be started', () => {
    const { calls, libc } = recorder();
    const held = closeAfterExit(
      libc,
      () => {
        throw new Error('posix_spawn: EAGAIN');
      },
      [7],
    );
    expect(held).toBe(false);
    expect(calls).toEqual(['pipe', 'close 20', 'close 7']);
  });

  it('still closes the fds when not even the pipe can be made', () => {
    const closes: number[] = [];
    const libc = fakeLibc({
      pipe: () => {
        throw new Error('pipe2: EMFILE');
      },
      close: (fd) => void closes.push(fd),
    });
    expect(closeAfterExit(libc, () => undefined, [7])).toBe(false);
    expect(closes).toEqual([7]);
  });
});
