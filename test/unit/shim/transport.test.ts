// The Bun twin outside Bun, the boot clock.
import { describe, expect, it } from 'vitest';
import { bootClock } from '../../../src/shim/exchange';
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
