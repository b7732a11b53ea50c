// GC (gc(ctx, req)) on a real stateDir with the announcer's attachment locks: what it collects, and what it leaves.
import { chmodSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { gc } from '../../../src/commands/gc';
import { AddHarness } from '../../support/add-harness';

let h: AddHarness;
beforeEach(() => {
  h = new AddHarness();
  return () => h.cleanup();
});

/** GC of network "net" whose runtime still lists `live` (container IDs, each on eth0). */
const gcOf = (...live: string[]) => ({
  ...h.request('GC'),
  validAttachments: live.map((containerId) => ({ containerId, ifname: 'eth0' })),
});

describe('GC', () => {
  const collectsTitle =
    "collects stale and invalid records and dead writers' temp files under each attachment's lock; keeps live, " +
    "busy and other networks' ones";
  it(collectsTitle, async () => {
    for (const containerId of ['stale', 'live', 'busy']) h.previous({ containerId });
    h.previous({ containerId: 'other', network: 'elsewhere' });
    writeFileSync(join(h.stateDir, 'bad@eth0.json'), '{"tail":{"pid":0}}');
    writeFileSync(join(h.stateDir, '.stale@eth0.json.4194305.00aa11bb.tmp'), '');
    const liveTemp = `.live@eth0.json.${process.pid}.00aa11bb.tmp`;
    writeFileSync(join(h.stateDir, liveTemp), '');
    const busy = (await h.locks.take('busy@eth0', 0))!;
    await gc(h.ctx(), gcOf('live'));
    busy.release();
    expect(readdirSync(h.stateDir).sort()).toEqual([liveTemp, 'busy@eth0.json', 'live@eth0.json', 'other@eth0.json']);
    expect(h.handed).toEqual([{ cancel: 'stale@eth0.json' }]);
    expect(h.said('collected stale attachment')).toEqual([
      {
        level: 'info',
        msg: 'collected stale attachment',
        fields: { containerId: 'stale', ifname: 'eth0', background: 'cancelled', recordRemoved: true },
      },
    ]);
    expect(h.said('invalid state record: removing it without acting on it')).toHaveLength(1);
    expect(h.said('attachment busy: left for the next GC')).toHaveLength(1);
  });

  it('is code 105 on an unsafe stateDir, and does nothing without one', async () => {
    chmodSync(h.stateDir, 0o757);
    const refused = gc(h.ctx(), gcOf());
    await expect(refused).rejects.toMatchObject({ code: 105, message: expect.stringContaining('chmod 0700') });
    rmSync(h.stateDir, { recursive: true });
    await gc(h.ctx(), gcOf());
    expect(() => readdirSync(h.stateDir)).toThrow(/ENOENT/);
  });
});
