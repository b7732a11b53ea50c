// DEL, GC and STATUS on a real state dir, with a real flock and a fake rest:
// what they do with unsafe dirs, invalid records, held locks and live tails.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LOCK_GRACE_MS } from '../../../src/announce/attachment-lock';
import { writeRecord, type AttachmentRecord } from '../../../src/announce/state';
import { realTimers } from '../../../src/announce/timers';
import { parseConfig } from '../../../src/cni/config';
import type { DelRequest, GcRequest, StatusRequest } from '../../../src/cni/dispatch';
import { del } from '../../../src/commands/del';
import type { CommandDeps } from '../../../src/commands/deps';
import { gc } from '../../../src/commands/gc';
import { status } from '../../../src/commands/status';
import { createLogger } from '../../../src/log';
import { acquireFileLock } from '../../../src/sys/file-lock';
import { loadTryLock } from '../../../src/sys/flock';
import { processStartTime } from '../../../src/sys/processes';
import { fakeLibc } from '../../support/fake-libc';

const tryLock = loadTryLock();
const timers = realTimers(() => Date.now());

let base: string;
let stateDir: string;
let lines: string[];
let lockCalls: { path: string; timeoutMs: number }[];
const children: ChildProcess[] = [];

function deps(overrides: Partial<CommandDeps> = {}): CommandDeps {
  return {
    libc: () => fakeLibc({ openPacketSocket: () => 99, close: () => undefined }),
    timers,
    logger: (_config, ids) => createLogger((line) => lines.push(line), 'debug', { containerId: ids.containerId, ifname: ids.ifname }),
    startTail: () => {
      throw new Error('unexpected startTail');
    },
    closeAfterExit: () => undefined,
    lockFile: (path, timeoutMs) => {
      lockCalls.push({ path, timeoutMs });
      return acquireFileLock(path, timeoutMs, { tryLock, now: timers.now, sleep: timers.sleep });
    },
    ...overrides,
  };
}

const config = (extra: Record<string, unknown> = {}) => parseConfig({ cniVersion: '1.1.0', name: 'net', type: 'announcer', stateDir, ...extra });

function delRequest(extra: Record<string, unknown> = {}): DelRequest {
  return { config: config(extra), cniVersion: '1.1.0', options: {} as DelRequest['options'], notes: [], env: { command: 'DEL', containerId: 'c1', ifname: 'eth0', args: {} } as DelRequest['env'] };
}

function gcRequest(valid: { containerId: string; ifname: string }[]): GcRequest {
  return { config: config(), cniVersion: '1.1.0', options: {} as GcRequest['options'], notes: [], env: { command: 'GC', args: {} } as GcRequest['env'], validAttachments: valid };
}

function record(extra: Partial<AttachmentRecord> = {}): AttachmentRecord {
  return { network: 'net', containerId: 'c1', ifname: 'eth0', netns: '/var/run/netns/none', netnsId: { dev: 4, ino: 1 }, originalMacs: [], ...extra };
}

async function sleeper(): Promise<{ child: ChildProcess; pid: number; startTime: string }> {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  children.push(child);
  await new Promise((resolve) => child.once('spawn', resolve));
  return { child, pid: child.pid!, startTime: processStartTime(child.pid!)! };
}

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'state-commands-'));
  stateDir = join(base, 'state');
  mkdirSync(stateDir, { mode: 0o700 });
  lines = [];
  lockCalls = [];
});

afterEach(() => {
  vi.restoreAllMocks();
  for (const c of children.splice(0)) c.kill('SIGKILL');
  rmSync(base, { recursive: true, force: true });
});

describe('DEL', () => {
  it('stops the recorded tail, removes the record and the lock file, and says so at info', async () => {
    const tail = await sleeper();
    writeRecord(stateDir, record({ tail: { pid: tail.pid, startTime: tail.startTime } }));
    await del(deps(), delRequest());
    expect(readdirSync(stateDir)).toEqual([]);
    expect(lockCalls).toEqual([{ path: join(stateDir, 'c1@eth0.lock'), timeoutMs: 2000 + LOCK_GRACE_MS }]);
    expect(lines.at(-1)).toMatch(new RegExp(`INFO DEL done containerId=c1 ifname=eth0 tail=terminated tailPid=${tail.pid} macsRestored=none recordRemoved=true\\n$`));
  });

  it('removes an invalid record without signalling anything', async () => {
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => {
      throw new Error('kill must not be called');
    });
    writeFileSync(join(stateDir, 'c1@eth0.json'), JSON.stringify({ ...record(), tail: { pid: -1 } }));
    await del(deps(), delRequest());
    expect(kill).not.toHaveBeenCalled();
    expect(readdirSync(stateDir)).toEqual([]);
    expect(lines.join('')).toMatch(/WARN invalid state record: removing it without acting on it .*problem="\\"tail.pid\\" must be an integer from 2 to 4194304"/);
    expect(lines.at(-1)).toMatch(/INFO DEL: no state record, nothing to undo containerId=c1 ifname=eth0/);
  });

  it('goes ahead without the lock when it stays held, and leaves the holder its file', async () => {
    const held = (await acquireFileLock(join(stateDir, 'c1@eth0.lock'), 0, { tryLock, now: timers.now, sleep: timers.sleep }))!;
    try {
      writeRecord(stateDir, record());
      await del(deps({ lockFile: async () => undefined }), delRequest());
      expect(readdirSync(stateDir)).toEqual(['c1@eth0.lock']);
      expect(lines.join('')).toMatch(/WARN another command on this attachment still runs after 12000 ms: deleting without the lock/);
    } finally {
      held.release();
    }
  });

  it('does nothing in an unsafe stateDir, saying what to fix', async () => {
    chmodSync(stateDir, 0o777);
    writeRecord(stateDir, record());
    await del(deps(), delRequest());
    expect(lockCalls).toEqual([]);
    expect(readdirSync(stateDir)).toEqual(['c1@eth0.json']);
    expect(lines.join('')).toMatch(`ERROR DEL did nothing: unsafe stateDir: ${stateDir} is writable by group or others (mode 0777): chmod 0700 ${stateDir} containerId=c1 ifname=eth0`);
  });

  it('creates a missing stateDir 0700 and finds nothing to undo', async () => {
    rmSync(stateDir, { recursive: true });
    await del(deps(), delRequest());
    expect(readdirSync(stateDir)).toEqual([]);
  });
});

describe('GC', () => {
  it('collects stale and invalid records, orphan locks and dead writers\' temp files; keeps live and busy ones', async () => {
    const tail = await sleeper();
    writeRecord(stateDir, record({ containerId: 'stale', tail: { pid: tail.pid, startTime: tail.startTime } }));
    writeRecord(stateDir, record({ containerId: 'live' }));
    writeRecord(stateDir, record({ containerId: 'other', network: 'elsewhere' }));
    writeRecord(stateDir, record({ containerId: 'busy' }));
    writeFileSync(join(stateDir, 'bad@eth0.json'), '{"tail":{"pid":0}}');
    writeFileSync(join(stateDir, 'orphan@eth0.lock'), '');
    writeFileSync(join(stateDir, '.stale@eth0.json.4194305.00aa11bb.tmp'), '');
    writeFileSync(join(stateDir, `.live@eth0.json.${process.pid}.00aa11bb.tmp`), '');
    const busy = (await acquireFileLock(join(stateDir, 'busy@eth0.lock'), 0, { tryLock, now: timers.now, sleep: timers.sleep }))!;
    try {
      await gc(deps(), gcRequest([{ containerId: 'live', ifname: 'eth0' }]));
    } finally {
      busy.release();
    }
    expect(readdirSync(stateDir).sort()).toEqual(
      [`.live@eth0.json.${process.pid}.00aa11bb.tmp`, 'busy@eth0.json', 'busy@eth0.lock', 'live@eth0.json', 'other@eth0.json'].sort(),
    );
    expect(tail.child.signalCode ?? (await new Promise((r) => tail.child.once('exit', (_c, s) => r(s))))).toBe('SIGTERM');
    const log = lines.join('');
    expect(log).toMatch(/INFO collected stale attachment containerId=stale ifname=eth0 tail=terminated recordRemoved=true/);
    expect(log).toMatch(/WARN invalid state record/);
  });

  it('is code 105 on an unsafe stateDir, and does nothing without one', async () => {
    chmodSync(stateDir, 0o757);
    await expect(gc(deps(), gcRequest([]))).rejects.toMatchObject({ code: 105, message: expect.stringContaining('chmod 0700') });
    rmSync(stateDir, { recursive: true });
    await gc(deps(), gcRequest([]));
    expect(() => readdirSync(stateDir)).toThrow(/ENOENT/);
  });
});

describe('STATUS', () => {
  const request = (): StatusRequest => ({ config: config(), cniVersion: '1.1.0', options: {} as StatusRequest['options'], notes: [], env: { command: 'STATUS', args: {} } as StatusRequest['env'] });

  it('is ready with a private stateDir', async () => {
    await expect(status(deps(), request())).resolves.toBeUndefined();
  });

  it('is code 50 naming the fix for a stateDir others can write or that is a file', async () => {
    chmodSync(stateDir, 0o777);
    await expect(status(deps(), request())).rejects.toMatchObject({ code: 50, message: `announcer not available: unsafe stateDir: ${stateDir} is writable by group or others (mode 0777): chmod 0700 ${stateDir}` });
    rmSync(stateDir, { recursive: true });
    closeSync(openSync(stateDir, 'w'));
    await expect(status(deps(), request())).rejects.toMatchObject({ code: 50, message: expect.stringContaining('is not a directory') });
  });
});
