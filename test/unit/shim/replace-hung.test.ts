// Who holds the announcer's lock (against a lock this test takes itself), and the named recovery of a hung announcer
// a call started (replace-hung.ts): the decision is pure, and the kill happens only when the proof holds twice.
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  announcerPid,
  HUNG_AFTER_MS,
  type HolderFacts,
  judgeHolder,
  replaceHung,
} from '../../../src/shim/replace-hung';
import { DAEMON_LOCK } from '../../../src/state-files';
import { loadLibc } from '../../../src/sys/libc';
import { useTempDir } from '../../support/temp-dir';

const OWN = { dev: 2049, ino: 777 };
const NOW = 1_000_000_000;
const HOLDER = 4242;
const hung = (extra: Partial<HolderFacts> = {}): HolderFacts => ({
  pid: HOLDER,
  exe: { ...OWN },
  ownExe: OWN,
  stampedAt: NOW - HUNG_AFTER_MS - 1,
  ...extra,
});

describe('judgeHolder', () => {
  it('replaces a holder of our lock that runs this executable and has not stamped progress for HUNG_AFTER_MS', () => {
    expect(judgeHolder(hung(), NOW)).toEqual({ replace: HOLDER });
  });

  it.each([
    ['no holder', { pid: undefined }, 'no other process holds the lock'],
    ['init', { pid: 1 }, 'no other process holds the lock'],
    ['this process', { pid: process.pid }, 'no other process holds the lock'],
    ['an unreadable exe', { exe: undefined }, `pid ${HOLDER} does not run this executable`],
    ['another file (the DaemonSet image, an upgraded binary)', { exe: { dev: 2049, ino: 778 } }, 'does not run'],
    ['another device', { exe: { dev: 2050, ino: 777 } }, 'does not run'],
    ['a stamp HUNG_AFTER_MS old', { stampedAt: NOW - HUNG_AFTER_MS }, `made progress ${HUNG_AFTER_MS} ms ago`],
    ['a fresh stamp', { stampedAt: NOW - 300 }, 'made progress 300 ms ago'],
    ['a stamp from the future (clock stepped back)', { stampedAt: NOW + 5000 }, 'made progress 0 ms ago'],
  ] as [string, Partial<HolderFacts>, string][])('keeps it with %s', (_what, extra, why) => {
    expect(judgeHolder(hung(extra), NOW)).toEqual({ keep: expect.stringContaining(why) });
  });
});

describe('replaceHung', () => {
  function run(facts: HolderFacts[]) {
    const killed: number[] = [];
    const reads = [...facts];
    const read = async () => reads.shift() ?? facts.at(-1)!;
    return {
      killed,
      outcome: replaceHung(
        '/state',
        read,
        (pid) => void killed.push(pid),
        () => NOW,
      ),
    };
  }

  it('kills the proven holder by pid, once, after proving it again', async () => {
    const r = run([hung(), hung()]);
    expect(await r.outcome).toBe(
      `pid ${HOLDER} made no progress for ${HUNG_AFTER_MS} ms: killed (SIGKILL), the next call starts another`,
    );
    expect(r.killed).toEqual([HOLDER]);
  });

  it('signals nothing when the holder is not ours, not hung, or changed between the two looks', async () => {
    for (const facts of [
      [hung({ exe: { dev: 1, ino: 1 } })],
      [hung({ stampedAt: NOW })],
      [hung(), hung({ stampedAt: NOW })],
      [hung(), hung({ pid: HOLDER + 1 })],
      [hung(), hung({ pid: undefined })],
    ]) {
      const r = run(facts);
      expect(await r.outcome).toMatch(/^not replaced: /);
      expect(r.killed).toEqual([]);
    }
  });
});

describe('announcerPid', () => {
  let stateDir: string;
  useTempDir('lock-holder-', (d) => (stateDir = d));

  it("is the pid holding stateDir's announcer lock, undefined while none does", async () => {
    const fd = openSync(join(stateDir, DAEMON_LOCK), 'w');
    try {
      expect(await announcerPid(stateDir)).toBeUndefined();
      expect(loadLibc().tryLock(fd)).toBe(true);
      expect(await announcerPid(stateDir)).toBe(process.pid);
    } finally {
      closeSync(fd);
    }
  });
});
