import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lockPath, lockWaitMs } from '../../../src/announce/attachment-lock';

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

  it('waits past the longest an ADD may hold it (addWaitMs, the largest probe and gateway wait), plus 10 s', () => {
    // An ADD that is not stuck never makes a waiter give up: readiness, probeMs 2 s, gatewayCheck require 10 s.
    expect(lockWaitMs(2000)).toBe(2000 + 2000 + 10_000 + 10_000);
    expect(lockWaitMs(0)).toBe(22_000);
  });
});
