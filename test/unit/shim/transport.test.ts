// The Bun twin outside Bun, the fallback's stdin and the boot clock.
import { describe, expect, it } from 'vitest';
import { bootClock } from '../../../src/shim/exchange';
import { resumedStdin } from '../../../src/shim/fallback-stdin';
import { MAX_FORWARDED_STDIN } from '../../../src/shim/wire';
import { connectUnix as bunConnect } from '../../../src/sys/unix-stream.bun';
import { StreamError } from '../../../src/sys/stream-connection';

describe('the unix-stream twins', () => {
  it("Bun's refuses with a StreamError outside Bun", async () => {
    const err = await bunConnect('/x', { data: () => undefined, end: () => undefined, error: () => undefined }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StreamError);
  });
});

describe('resumedStdin', () => {
  const bytes = (n: number) => new Uint8Array(n).fill(0x61);

  it('gives what the shim read to EOF, within the limit asked', async () => {
    const read = resumedStdin(bytes(10), async () => {
      throw new Error('fd 0 is at EOF');
    });
    expect(await read(100)).toHaveLength(10);
    expect(await read(4)).toHaveLength(5);
  });

  it("reads on after the shim's limit, to maxBytes + 1 bytes in all", async () => {
    const asked: number[] = [];
    const taken = bytes(MAX_FORWARDED_STDIN + 1);
    const read = resumedStdin(taken, async (max) => {
      asked.push(max);
      return bytes(max + 1);
    });
    expect(await read(MAX_FORWARDED_STDIN + 100)).toHaveLength(MAX_FORWARDED_STDIN + 101);
    expect(asked).toEqual([99]);
    expect(await read(MAX_FORWARDED_STDIN - 1)).toHaveLength(MAX_FORWARDED_STDIN);
  });
});

describe('bootClock', () => {
  it('is /proc/uptime in ms, read once, carried on by the elapsed time', () => {
    let reads = 0;
    let elapsed = 40;
    const clock = bootClock(
      () => {
        reads++;
        return '7562.26 4259.49\n';
      },
      () => elapsed,
    );
    expect(clock.now()).toBe(7_562_260);
    elapsed = 340;
    expect(clock.now()).toBe(7_562_560);
    expect(reads).toBe(1);
  });
});
