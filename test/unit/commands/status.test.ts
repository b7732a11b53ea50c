// STATUS (status(ctx, req)): ready, or code 50 naming what to fix.
import { chmodSync, closeSync, openSync, rmSync } from 'node:fs';
import { beforeEach, describe, expect, it } from 'vitest';
import { status } from '../../../src/commands/status';
import { AddHarness } from '../../support/add-harness';

let h: AddHarness;
beforeEach(() => {
  h = new AddHarness();
  return () => h.cleanup();
});

describe('STATUS', () => {
  const readyTitle =
    'is ready with a private stateDir, the packet socket it opened closed in the background (its last close is slow)';
  it(readyTitle, async () => {
    await expect(status(h.ctx(), h.request('STATUS'))).resolves.toBeUndefined();
    expect(h.released).toEqual([99]);
  });

  it('is code 50 naming the fix for a stateDir others can write or that is a file', async () => {
    const { stateDir } = h;
    chmodSync(stateDir, 0o777);
    await expect(status(h.ctx(), h.request('STATUS'))).rejects.toMatchObject({
      code: 50,
      message:
        `announcer not available: unsafe stateDir: ${stateDir} is writable by group or others (mode 0777): ` +
        `chmod 0700 ${stateDir}`,
    });
    rmSync(stateDir, { recursive: true });
    closeSync(openSync(stateDir, 'w'));
    const refused = status(h.ctx(), h.request('STATUS'));
    await expect(refused).rejects.toMatchObject({ code: 50, message: expect.stringContaining('is not a directory') });
  });
});
