// A work of the table and its record: the pod still there while the netns path names the same netns; the record
// written from the table (the journal), under the lock and only while the table holds the work.
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { firstVerdict } from '../../../src/announce/gateway-verdict';
import { readRecordFile } from '../../../src/announce/state';
import { newCounters } from '../../../src/daemon/counters';
import { podThere, recordFirstRound, recordOf, recordVerdict, sameJob } from '../../../src/daemon/job-record';
import type { Work } from '../../../src/daemon/rounds';
import { jobIn, jobRecord, keptLog, makeStateDir, writeJob, type StateDir } from '../../support/daemon-fakes';
import { identityViews } from '../../support/caller-view-fakes';
import { RecordMemory } from '../../../src/announce/record-memory';

let state: StateDir;
beforeEach(() => {
  state = makeStateDir();
});
afterEach(() => state.remove());

const MACS = [{ name: 'eth0', mac: '02:00:00:00:00:01' }];
const GW = { interface: 'eth0', gateway: '10.88.0.1' };

function workOf(name: string, extra = {}): Work & { lines: string[] } {
  const kept = keptLog();
  return {
    name,
    job: jobIn(state, { firstRoundAt: undefined, ...extra }),
    originalMacs: MACS,
    log: kept.log,
    firstRoundAt: 1_000_500,
    next: 1,
    dueAt: undefined,
    roundsSent: 1,
    delayed: false,
    lines: kept.lines,
  };
}

const recordIn = (name: string) => JSON.parse(readFileSync(join(state.dir, name), 'utf8'));
/** A lock that is always free: each path taken, and each release, goes to `paths`. */
const lockedBy = (paths: string[]) => async (path: string) => (
  paths.push(path), { path, release: () => void paths.push(`released ${path}`) }
);

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

describe('podThere', () => {
  it('while the netns path names the netns ADD saw, whatever became of the record', () => {
    const w = workOf(writeJob(state, jobIn(state)));
    rmSync(join(state.dir, w.name));
    expect(podThere({ views: identityViews }, w)).toBe(true);
    writeFileSync(`${state.netns}.new`, '');
    renameSync(`${state.netns}.new`, state.netns); // another file (netns) at the path
    expect(podThere({ views: identityViews }, w)).toBe(false);
    rmSync(state.netns);
    expect(podThere({ views: identityViews }, w)).toBe(false);
  });

  it("not when the caller's view cannot be had again: a WARN says so", () => {
    const w = workOf('c1@eth0.json');
    expect(podThere({ views: { forRecorded: () => undefined } }, w)).toBe(false);
    expect(w.lines.some((l) => l.includes('WARN') && l.includes("the caller's view"))).toBe(true);
  });
});

describe('recordOf', () => {
  it('is the record ADD wrote, with the work as it stands: it passes the record schema', () => {
    const w = { ...workOf('c1@eth0.json'), gateway: { verdict: firstVerdict([GW]) } };
    const written = { ...jobRecord(w.job), originalMacs: MACS, gateway: firstVerdict([GW]) };
    expect(recordOf(w)).toEqual(written);
    const name = writeJob(state, w.job);
    writeFileSync(join(state.dir, name), JSON.stringify(recordOf(w)));
    expect(readRecordFile(join(state.dir, name))).toEqual({ kind: 'ok', record: written });
    expect(JSON.parse(JSON.stringify(recordOf({ ...w, gateway: undefined })))).not.toHaveProperty('gateway');
  });
});

describe('recordFirstRound', () => {
  const writesWhenRoundTitle =
    'writes the record from the table, round 1 noted, under the attachment lock, and the work carries it on';
  it(writesWhenRoundTitle, async () => {
    const name = writeJob(state, jobIn(state, { firstRoundAt: undefined }));
    const w = workOf(name);
    const paths: string[] = [];
    const counters = newCounters();
    await recordFirstRound(
      { stateDir: state.dir, written: new RecordMemory(), lockFile: lockedBy(paths), holds: () => true },
      counters,
      w,
    );
    expect(recordIn(name).job.firstRoundAt).toBe(1_000_500);
    expect(recordIn(name).originalMacs).toEqual(MACS);
    expect(w.job.firstRoundAt).toBe(1_000_500);
    expect(paths).toEqual([join(state.dir, 'c1@eth0.lock'), `released ${join(state.dir, 'c1@eth0.lock')}`]);
    expect(counters.errors).toBe(0);
  });

  it('writes nothing once the table no longer holds the work, nor while the lock is held', async () => {
    const name = writeJob(state, jobIn(state, { firstRoundAt: undefined }));
    const w = workOf(name);
    await recordFirstRound(
      { stateDir: state.dir, written: new RecordMemory(), lockFile: lockedBy([]), holds: () => false },
      newCounters(),
      w,
    );
    expect(recordIn(name).job.firstRoundAt).toBeUndefined();
    await recordFirstRound(
      { stateDir: state.dir, written: new RecordMemory(), lockFile: async () => undefined, holds: () => true },
      newCounters(),
      w,
    );
    expect(recordIn(name).job.firstRoundAt).toBeUndefined();
  });

  it('counts and logs a lock that throws, or a record it cannot write', async () => {
    const w = workOf(writeJob(state, jobIn(state, { firstRoundAt: undefined })));
    const counters = newCounters();
    const throwing = async () => {
      throw new Error('EMFILE');
    };
    await recordFirstRound(
      { stateDir: state.dir, written: new RecordMemory(), lockFile: throwing, holds: () => true },
      counters,
      w,
    );
    expect(counters.errors).toBe(1);
    expect(w.lines.some((l) => l.includes('cannot record that round 1 went out') && l.includes('EMFILE'))).toBe(true);
    const missing = join(state.dir, 'missing');
    await recordFirstRound(
      { stateDir: missing, written: new RecordMemory(), lockFile: lockedBy([]), holds: () => true },
      counters,
      w,
    );
    expect(counters.errors).toBe(2);
  });
});

describe('recordVerdict', () => {
  it("writes the work's verdict into its record; a work without the check writes nothing", async () => {
    const name = writeJob(state, jobIn(state));
    const deps = { stateDir: state.dir, written: new RecordMemory(), lockFile: lockedBy([]), holds: () => true };
    await recordVerdict(deps, newCounters(), workOf(name));
    expect(recordIn(name).originalMacs).toEqual([]); // not written
    const verdict = { ...firstVerdict([GW]), result: 'no-answer' as const };
    await recordVerdict(deps, newCounters(), { ...workOf(name), gateway: { verdict } });
    expect(recordIn(name).gateway).toEqual(verdict);
    const counters = newCounters();
    const failing = { ...workOf(name), gateway: { verdict } };
    await recordVerdict({ ...deps, stateDir: join(state.dir, 'missing') }, counters, failing);
    expect(counters.errors).toBe(1);
    expect(failing.lines.some((l) => l.includes('WARN cannot record the gateway check'))).toBe(true);
  });
});
