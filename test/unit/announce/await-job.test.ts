import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { awaitJob } from '../../../src/announce/await-job';
import { recordPath, removeRecord, writeRecord, type AttachmentRecord } from '../../../src/announce/state';
import type { TailJob } from '../../../src/announce/tail-job';
import { realTimers } from '../../../src/announce/timers';

const JOB = { network: 'n', containerId: 'c1', ifname: 'eth0', schedule: [0, 100] } as unknown as TailJob;

describe('awaitJob', () => {
  let dir: string;
  let file: string;
  const base = (extra: Partial<AttachmentRecord>): AttachmentRecord => ({
    network: 'n',
    containerId: 'c1',
    ifname: 'eth0',
    netns: '/var/run/netns/x',
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
});
