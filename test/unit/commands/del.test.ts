// DEL (del(ctx, req)) on a real stateDir, with the announcer's attachment locks and gate, in the fake world of
// test/support/add-harness.ts: what it undoes, under the attachment's lock, and what it leaves alone.
import { chmodSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { del } from '../../../src/commands/del';
import { AddHarness, pendingJob } from '../../support/add-harness';
import { settle } from '../../support/manual-timers';

let h: AddHarness;
beforeEach(() => {
  h = new AddHarness();
  return () => h.cleanup();
});

const JOB = pendingJob({ schedule: [0, 1000] });
const IDS = { containerId: 'c1', ifname: 'eth0' };
const done = (background: string) => ({
  level: 'info',
  msg: 'DEL done',
  fields: { ...IDS, background, macsRestored: 'none', recordRemoved: true },
});

describe('DEL', () => {
  const undoesTitle =
    'cancels the background work and removes the record, restoring no MAC into a netns that is gone, and says so at ' +
    'info';
  it(undoesTitle, async () => {
    const netns = join(h.stateDir, 'netns-gone');
    h.previous({ netns, originalMacs: [{ name: 'eth0', mac: '02:42:ac:11:00:02' }], job: JOB });
    await del(h.ctx(), h.request('DEL'));
    expect(readdirSync(h.stateDir)).toEqual([]);
    expect(h.handed).toEqual([{ cancel: 'c1@eth0.json' }]);
    const gone = { level: 'info', msg: 'pod netns gone: no MAC to restore', fields: { ...IDS, netns } };
    expect(h.records()).toEqual([gone, done('cancelled')]);
  });

  it("removes an invalid record without acting on it, and ends the table's work all the same", async () => {
    writeFileSync(h.file(), JSON.stringify({ ...h.previous(), job: { ...JOB, schedule: 'soon' } }));
    await del(h.ctx(), h.request('DEL'));
    expect(h.handed).toEqual([{ cancel: 'c1@eth0.json' }]);
    expect(readdirSync(h.stateDir)).toEqual([]);
    const got = h.said('invalid state record: removing it without acting on it');
    expect(got).toMatchObject([{ level: 'warn', fields: { problem: '"job.schedule" must be an array' } }]);
    const seen = h.said('DEL: no state record, nothing to undo');
    expect(seen).toMatchObject([{ level: 'info', fields: { ...IDS, background: 'cancelled' } }]);
  });

  const waitsForAddTitle =
    "waits for an ADD of the attachment that holds its lock, then undoes what that ADD did: the record's job, and " +
    'the work it handed to the table';
  it(waitsForAddTitle, async () => {
    h.eth0({ running: false }); // ADD waits for its pod, then leaves a job for later
    let endWait: () => void = () => undefined;
    const waits = { readable: () => new Promise<void>((end) => (endWait = end)) };
    const adding = h.add({}, { ...h.ctx(), waits });
    await settle();
    const deleting = del(h.ctx(), h.request('DEL'));
    for (let i = 0; i < 5; i++) await settle();
    expect({ handed: h.handed, log: h.said('DEL done') }).toEqual({ handed: [], log: [] }); // DEL waits
    h.timers.advance(1000); // ADD's wait ends without a ready pod
    endWait();
    await Promise.all([adding, deleting]);
    const found = h.handed;
    expect(found).toEqual([expect.objectContaining({ added: 'c1@eth0.json', job: true }), { cancel: 'c1@eth0.json' }]);
    expect(readdirSync(h.stateDir)).toEqual([]);
    expect(h.said('DEL done')).toEqual([done('cancelled')]);
  });

  it('goes ahead without the lock when it stays held past lockWaitMs, and removes the record', async () => {
    const held = (await h.locks.take('c1@eth0', 0))!;
    h.previous();
    await h.drive(del(h.ctx(), h.request('DEL')), 1000);
    expect(readdirSync(h.stateDir)).toEqual([]);
    const msg = 'another command on this attachment still runs after 24000 ms: deleting without the lock';
    expect(h.said(msg)).toMatchObject([{ level: 'warn' }]);
    held.release();
  });

  it('does nothing in an unsafe stateDir, saying what to fix', async () => {
    h.previous();
    chmodSync(h.stateDir, 0o777);
    await del(h.ctx(), h.request('DEL'));
    expect({ files: readdirSync(h.stateDir), handed: h.handed }).toEqual({ files: ['c1@eth0.json'], handed: [] });
    const { stateDir } = h;
    const msg =
      `DEL did nothing: unsafe stateDir: ${stateDir} is writable by group or others (mode 0777): ` +
      `chmod 0700 ${stateDir}`;
    expect(h.records()).toEqual([{ level: 'error', msg, fields: IDS }]);
  });

  const passedOnTitle =
    'a DEL the announcer stopped before it acted (passed on while it waited for the lock) removes, restores and ' +
    'cancels nothing: the next announcer runs it';
  it(passedOnTitle, async () => {
    h.previous({ job: JOB });
    h.gate.stop('the announcer (pid 7) stops: passed on');
    await expect(del(h.ctx(), h.request('DEL'))).rejects.toThrow('stops: passed on');
    expect(h.left()).toMatchObject({ record: true, handed: [] });
    expect(h.gate.acted).toBe(false);
  });

  it('creates a missing stateDir 0700 and finds nothing to undo', async () => {
    rmSync(h.stateDir, { recursive: true });
    await del(h.ctx(), h.request('DEL'));
    expect(readdirSync(h.stateDir)).toEqual([]);
    expect(statSync(h.stateDir).mode & 0o777).toBe(0o700);
  });
});
