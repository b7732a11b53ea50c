import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lockPath, lockWaitMs, releaseAttachmentLock } from '../../../src/announce/attachment-lock';
import { acquireFileLock } from '../../../src/sys/file-lock';
import { loadLibc } from '../../../src/sys/libc';

const lockDeps = { tryLock: loadLibc().tryLock, now: () => performance.now(), sleep: (ms: number) => sleep(ms) };

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'attachment-lock-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('attachment lock', () => {
  it('sits next to the record, under the same name', () => {
    expect(lockPath('/run/cni-announcer', 'c1', 'eth0')).toBe('/run/cni-announcer/c1@eth0.lock');
    expect(lockPath('/s', 'x'.repeat(250), 'eth0')).toMatch(/^\/s\/sha256-[0-9a-f]{64}\.lock$/);
  });

  it('waits addWaitMs plus a 10 s margin', () => {
    expect(lockWaitMs(2000)).toBe(12_000);
    expect(lockWaitMs(0)).toBe(10_000);
  });

  it('removes the lock file on release only when no record is left', async () => {
    const lock = lockPath(dir, 'c1', 'eth0');
    const record = join(dir, 'c1@eth0.json');
    writeFileSync(record, '{}');
    releaseAttachmentLock((await acquireFileLock(lock, 0, lockDeps))!, record);
    expect(existsSync(lock)).toBe(true);
    rmSync(record);
    releaseAttachmentLock((await acquireFileLock(lock, 0, lockDeps))!, record);
    expect(existsSync(lock)).toBe(false);
  });
});
