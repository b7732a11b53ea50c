// announcerPid against a lock this test takes itself on a stateDir's announcer lock file.
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { announcerPid } from '../../../src/shim/lock-holder';
import { DAEMON_LOCK } from '../../../src/state-files';
import { loadLibc } from '../../../src/sys/libc';

describe('announcerPid', () => {
  it("is the pid holding stateDir's announcer lock, undefined while none does", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'lock-holder-'));
    const fd = openSync(join(stateDir, DAEMON_LOCK), 'w');
    try {
      expect(await announcerPid(stateDir)).toBeUndefined();
      expect(loadLibc().tryLock(fd)).toBe(true);
      expect(await announcerPid(stateDir)).toBe(process.pid);
    } finally {
      closeSync(fd);
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
