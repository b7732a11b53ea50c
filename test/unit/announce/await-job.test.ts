import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { awaitJob, tailStillWanted } from '../../../src/announce/await-job';
import { recordPath, removeRecord, writeRecord, type AttachmentRecord } from '../../../src/announce/state';
import type { TailJob } from '../../../src/announce/tail-job';
import { realTimers } from '../../../src/announce/timers';

const JOB: TailJob = {
  network: 'n',
  containerId: 'c1',
  ifname: 'eth0',
  netns: '/var/run/netns/x',
  netnsId: { dev: 4, ino: 4026532300 },
  interfaces: [{ name: 'eth0', ipv4: ['10.88.0.5'], ipv6: [] }],
  hostPeerNames: [],
  arpOps: ['request'],
  schedule: [0, 100],
  readyDeadline: 1000,
  logLevel: 'info',
};

describe('awaitJob', () => {
  let dir: string;
  let file: string;
  const base = (extra: Partial<AttachmentRecord>): AttachmentRecord => ({
    network: 'n',
    containerId: 'c1',
    ifname: 'eth0',
    netns: '/var/run/netns/x',
    netnsId: { dev: 4, ino: 4026532300 },
    originalMacs: [],
    ...extra,
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'await-job-'));
    file = recordPath(dir, 'c1', 'eth0');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('returns the job at once when the record already holds it', async () => {
    writeRecord(dir, base({ job: JOB }));
    await expect(awaitJob(file, realTimers(() => Date.now()))).resolves.toEqual(JOB);
  });

  it('waits for ADD to write the job', async () => {
    writeRecord(dir, base({ jobDeadline: Date.now() + 5000 }));
    const pending = awaitJob(file, realTimers(() => Date.now()));
    setTimeout(() => writeRecord(dir, base({ job: JOB })), 50);
    await expect(pending).resolves.toEqual(JOB);
  });

  it('gives up when the record is removed (DEL came first)', async () => {
    writeRecord(dir, base({ jobDeadline: Date.now() + 5000 }));
    const pending = awaitJob(file, realTimers(() => Date.now()));
    setTimeout(() => removeRecord(file), 50);
    await expect(pending).resolves.toBeUndefined();
  });

  it('gives up at the deadline when no job comes', async () => {
    writeRecord(dir, base({ jobDeadline: Date.now() + 100 }));
    await expect(awaitJob(file, realTimers(() => Date.now()))).resolves.toBeUndefined();
  });

  it('gives up at once without a record', async () => {
    await expect(awaitJob(file, realTimers(() => Date.now()))).resolves.toBeUndefined();
  });

  it('gives up at once on an invalid record, never waiting on it', async () => {
    writeFileSync(file, JSON.stringify({ ...base({ jobDeadline: Date.now() + 5000 }), tail: { pid: -1, startTime: '1' } }));
    await expect(awaitJob(file, realTimers(() => Date.now()))).resolves.toBeUndefined();
  });
});

describe('tailStillWanted', () => {
  let dir: string;
  let file: string;
  const record = (extra: Partial<AttachmentRecord>): AttachmentRecord => ({
    network: 'n',
    containerId: 'c1',
    ifname: 'eth0',
    netns: '/var/run/netns/x',
    netnsId: { dev: 4, ino: 4026532300 },
    originalMacs: [],
    job: JOB,
    ...extra,
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'await-job-'));
    file = recordPath(dir, 'c1', 'eth0');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is true while the record names this tail, or no tail yet', () => {
    writeRecord(dir, record({ tail: { pid: 4242, startTime: '1' } }));
    expect(tailStillWanted(file, JOB, 4242)).toBe(true);
    writeRecord(dir, record({}));
    expect(tailStillWanted(file, JOB, 4242)).toBe(true);
  });

  it('is false once the record is removed, invalid, or names another tail', () => {
    expect(tailStillWanted(file, JOB, 4242)).toBe(false);
    writeRecord(dir, record({ tail: { pid: 4343, startTime: '1' } }));
    expect(tailStillWanted(file, JOB, 4242)).toBe(false);
    writeFileSync(file, '{}');
    expect(tailStillWanted(file, JOB, 4242)).toBe(false);
  });
});
