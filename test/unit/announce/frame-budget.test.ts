import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LockFile } from '../../../src/announce/attachment-lock';
import { BUCKET_FILE, sharedFrameBudget } from '../../../src/announce/frame-budget';
import { createLogger } from '../../../src/log';

const LIMIT = { framesPerSecond: 10, burst: 5 };

/** A lock that is always free. */
const free: LockFile = async (path) => ({ path, release: () => undefined });
/** A lock another process keeps holding. */
const busy: LockFile = async () => undefined;

describe('the shared frame budget', () => {
  let dir: string;
  let lines: string[];
  /** How often a take sent its frames. */
  let sends = 0;
  const sent = (): void => {
    sends++;
  };
  const log = () => createLogger((line) => void lines.push(line), 'debug');

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'frame-budget-'));
    lines = [];
    sends = 0;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('takes tokens from the bucket file in stateDir, and says how long to wait once they are gone', async () => {
    const budget = sharedFrameBudget(dir, LIMIT, free, log(), 'first');
    expect(await budget.take(5, () => 0, false, sent)).toEqual({ ok: true });
    expect(JSON.parse(readFileSync(join(dir, BUCKET_FILE), 'utf8'))).toEqual({ tokens: 0, atMs: 0 });
    expect(await budget.take(1, () => 0, false, sent)).toEqual({ ok: false, waitMs: 100 });
    expect(sends).toBe(1); // only what was taken was sent
    expect(await budget.take(1, () => 100, false, sent)).toEqual({ ok: true });
    expect(sends).toBe(2);
  });

  it('while a round 1 waits for tokens, later rounds wait too: round 1 is never dropped, a later round may be', async () => {
    const first = sharedFrameBudget(dir, LIMIT, free, log(), 'first');
    const later = sharedFrameBudget(dir, LIMIT, free, log(), 'later');
    expect(await first.take(5, () => 0, false, sent)).toEqual({ ok: true });
    expect(await first.take(1, () => 0, false, sent)).toEqual({ ok: false, waitMs: 100 }); // back by 150 at the latest
    expect(await later.take(1, () => 120, false, sent)).toEqual({ ok: false, waitMs: 30 }); // a token is there, but round 1 goes first
    expect(await first.take(1, () => 120, false, sent)).toEqual({ ok: true });
    expect(await later.take(1, () => 160, false, sent)).toEqual({ ok: false, waitMs: 40 }); // the token is gone: wait for the next
    expect(await later.take(1, () => 200, false, sent)).toEqual({ ok: true });
  });

  it('a bucket another process keeps busy means wait, not unmetered: a pod storm must not get through', async () => {
    const budget = sharedFrameBudget(dir, LIMIT, busy, log(), 'first');
    const taken = await budget.take(1, () => 0, false, sent);
    expect(taken.ok).toBe(false);
    expect(taken.ok === false && taken.waitMs).toBeGreaterThan(0);
    expect(lines).toEqual([]);
  });

  it('on credit, a bucket that stays busy lets the frames go unmetered, and says so', async () => {
    const budget = sharedFrameBudget(dir, LIMIT, busy, log(), 'first');
    expect(await budget.take(1, () => 0, true, sent)).toEqual({ ok: true });
    expect(lines.join('')).toMatch(/rate limit busy: sending unmetered/);
  });
});

describe('the shared frame budget, its lock and its file', () => {
  let dir: string;
  let lines: string[];
  let sends: number;
  const send = (): void => void sends++;
  const log = () =>
    createLogger(
      (line) => void lines.push(line.slice(25, -1)),
      'debug',
      {},
      () => new Date(0),
    );
  const bucketFile = () => join(dir, BUCKET_FILE);
  const bucket = () => JSON.parse(readFileSync(bucketFile(), 'utf8')) as unknown;

  /** A free lock that records what was asked and each release. */
  function recordingLock() {
    const calls: string[] = [];
    const lock: LockFile = async (path, timeoutMs) => {
      calls.push(`lock ${path} ${timeoutMs}`);
      return { path, release: () => void calls.push('release') };
    };
    return { lock, calls };
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'frame-budget-'));
    lines = [];
    sends = 0;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('holds <stateDir>/rate-limit.bucket.flock for at most 200 ms per take, and releases it whether or not tokens were there', async () => {
    const { lock, calls } = recordingLock();
    const budget = sharedFrameBudget(dir, LIMIT, lock, log(), 'later');
    expect(await budget.take(5, () => 0, false, send)).toEqual({ ok: true });
    expect(await budget.take(5, () => 0, false, send)).toEqual({ ok: false, waitMs: 500 });
    const flock = join(dir, 'rate-limit.bucket.flock');
    expect(calls).toEqual([`lock ${flock} 200`, 'release', `lock ${flock} 200`, 'release']);
    expect(lines).toEqual([]);
  });

  it('on credit with the bucket free, takes the frames whatever is left', async () => {
    const budget = sharedFrameBudget(dir, LIMIT, recordingLock().lock, log(), 'first');
    await budget.take(4, () => 0, false, send);
    expect(await budget.take(3, () => 0, true, send)).toEqual({ ok: true });
    expect(bucket()).toEqual({ tokens: -2, atMs: 0 });
    expect(sends).toBe(2);
  });

  it('sends unmetered, and says why, when the lock cannot be taken at all', async () => {
    const budget = sharedFrameBudget(
      dir,
      LIMIT,
      async () => Promise.reject(new Error('EACCES: permission denied')),
      log(),
      'first',
    );
    expect(await budget.take(1, () => 0, false, send)).toEqual({ ok: true });
    expect(sends).toBe(1);
    expect(lines).toEqual(['WARN rate limit unavailable: sending unmetered error="EACCES: permission denied"']);
  });

  it('sends unmetered, and says why, when the bucket file cannot be read; the lock is released', async () => {
    const { lock, calls } = recordingLock();
    mkdirSync(bucketFile());
    const budget = sharedFrameBudget(dir, LIMIT, lock, log(), 'first');
    expect(await budget.take(1, () => 0, false, send)).toEqual({ ok: true });
    expect(sends).toBe(1);
    expect(lines).toEqual([
      `WARN rate limit state unusable: sending unmetered error="${bucketFile()} is not a regular file"`,
      'DEBUG sent unmetered',
    ]);
    expect(calls.at(-1)).toBe('release');
  });

  it.each([
    ['not JSON', '{'],
    ['tokens not a number', '{"tokens":"5","atMs":0}'],
    ['no time', '{"tokens":1}'],
    ['no tokens', '{"atMs":0}'],
  ])('starts from a full bucket when the file holds %s', async (_what, text) => {
    writeFileSync(bucketFile(), text);
    const budget = sharedFrameBudget(dir, LIMIT, recordingLock().lock, log(), 'later');
    expect(await budget.take(5, () => 1000, false, send)).toEqual({ ok: true });
    expect(bucket()).toEqual({ tokens: 0, atMs: 1000 });
  });

  it('keeps a valid bucket, with the wait of a round 1, and drops a wait that is no number', async () => {
    writeFileSync(bucketFile(), '{"tokens":1,"atMs":0,"firstWaitsUntil":500}');
    const later = sharedFrameBudget(dir, LIMIT, recordingLock().lock, log(), 'later');
    expect(await later.take(1, () => 0, false, send)).toEqual({ ok: false, waitMs: 500 });
    writeFileSync(bucketFile(), '{"tokens":1,"atMs":0,"firstWaitsUntil":"500"}');
    expect(await later.take(1, () => 0, false, send)).toEqual({ ok: true });
    expect(bucket()).toEqual({ tokens: 0, atMs: 0 });
  });
});
