// A job against its record: still wanted while the record holds this very job
// and the netns path names the same netns; round 1 written back under the lock.
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newCounters } from '../../../src/daemon/counters';
import { recordFirstRound, sameJob, stillWanted } from '../../../src/daemon/job-record';
import type { Work } from '../../../src/daemon/rounds';
import { jobIn, keptLog, makeStateDir, writeJob, type StateDir } from '../../support/daemon-fakes';
import { identityViews } from '../../support/caller-view-fakes';

let state: StateDir;
beforeEach(() => {
  state = makeStateDir();
});
afterEach(() => state.remove());

function workOf(name: string, extra = {}): Work & { lines: string[] } {
  const kept = keptLog();
  return {
    name,
    job: jobIn(state, { firstRoundAt: undefined, ...extra }),
    log: kept.log,
    firstRoundAt: 1_000_500,
    next: 1,
    dueAt: undefined,
    roundsSent: 1,
    delayed: false,
    lines: kept.lines,
  };
}

describe('sameJob', () => {
  it("is one ADD's job: same netns identity, readyDeadline and firstRoundAt", () => {
    const a = jobIn(state);
    expect(sameJob(a, { ...a, schedule: [0] })).toBe(true);
    expect(sameJob(a, { ...a, netnsId: { ...a.netnsId, dev: a.netnsId.dev + 1 } })).toBe(false);
    expect(sameJob(a, { ...a, netnsId: { ...a.netnsId, ino: a.netnsId.ino + 1 } })).toBe(false);
    expect(sameJob(a, { ...a, readyDeadline: a.readyDeadline + 1 })).toBe(false);
    expect(sameJob(a, { ...a, firstRoundAt: undefined })).toBe(false);
  });
});

describe('stillWanted', () => {
  it('while the record holds this job and the netns path names the same netns', () => {
    const job = jobIn(state);
    const name = writeJob(state, job);
    const w = { ...workOf(name), job };
    expect(stillWanted({ stateDir: state.dir, views: identityViews }, w)).toBe(true);
    writeJob(state, { ...job, readyDeadline: job.readyDeadline + 1 });
    expect(stillWanted({ stateDir: state.dir, views: identityViews }, w)).toBe(false);
    writeJob(state, job);
    writeFileSync(`${state.netns}.new`, '');
    renameSync(`${state.netns}.new`, state.netns); // another file (netns) at the path
    expect(stillWanted({ stateDir: state.dir, views: identityViews }, w)).toBe(false);
  });

  it('not once the record is gone, invalid, or without a job', () => {
    const job = jobIn(state);
    const name = writeJob(state, job);
    const w = { ...workOf(name), job };
    writeFileSync(
      join(state.dir, name),
      JSON.stringify({ ...JSON.parse(readFileSync(join(state.dir, name), 'utf8')), job: undefined }),
    );
    expect(stillWanted({ stateDir: state.dir, views: identityViews }, w)).toBe(false);
    writeFileSync(join(state.dir, name), 'nonsense');
    expect(stillWanted({ stateDir: state.dir, views: identityViews }, w)).toBe(false);
    rmSync(join(state.dir, name));
    expect(stillWanted({ stateDir: state.dir, views: identityViews }, w)).toBe(false);
  });
});

describe('recordFirstRound', () => {
  const lockedBy = (paths: string[]) => async (path: string) => (paths.push(path), { path, release: () => undefined });

  const writesWhenRoundTitle =
    'writes when round 1 went out into the record, under the attachment lock, and the work carries it on';
  it(writesWhenRoundTitle, async () => {
    const name = writeJob(state, jobIn(state, { firstRoundAt: undefined }));
    const w = workOf(name);
    const paths: string[] = [];
    const counters = newCounters();
    await recordFirstRound({ stateDir: state.dir, lockFile: lockedBy(paths) }, counters, w);
    expect(JSON.parse(readFileSync(join(state.dir, name), 'utf8')).job.firstRoundAt).toBe(1_000_500);
    expect(w.job.firstRoundAt).toBe(1_000_500);
    expect(paths).toEqual([join(state.dir, 'c1@eth0.lock')]);
    expect(counters.errors).toBe(0);
  });

  it('leaves a record that holds another job alone, and does nothing while the lock is held', async () => {
    const name = writeJob(state, jobIn(state, { firstRoundAt: undefined, readyDeadline: 5 }));
    const w = workOf(name);
    await recordFirstRound({ stateDir: state.dir, lockFile: lockedBy([]) }, newCounters(), w);
    expect(JSON.parse(readFileSync(join(state.dir, name), 'utf8')).job.readyDeadline).toBe(5);
    expect(w.job.firstRoundAt).toBeUndefined();
    writeJob(state, w.job);
    await recordFirstRound({ stateDir: state.dir, lockFile: async () => undefined }, newCounters(), w);
    expect(JSON.parse(readFileSync(join(state.dir, name), 'utf8')).job.firstRoundAt).toBeUndefined();
  });

  it('counts and logs a lock that throws, or a record it cannot write', async () => {
    const name = writeJob(state, jobIn(state, { firstRoundAt: undefined }));
    const w = workOf(name);
    const counters = newCounters();
    await recordFirstRound(
      {
        stateDir: state.dir,
        lockFile: async () => {
          throw new Error('EMFILE');
        },
      },
      counters,
      w,
    );
    expect(counters.errors).toBe(1);
    expect(w.lines.some((l) => l.includes('cannot record that round 1 went out') && l.includes('EMFILE'))).toBe(true);
    // The record read through a name that leads out of a stateDir that does not exist: it cannot be written there.
    await recordFirstRound({ stateDir: join(state.dir, 'missing'), lockFile: lockedBy([]) }, counters, {
      ...w,
      name: `../${name}`,
    });
    expect(counters.errors).toBe(2);
  });
});
