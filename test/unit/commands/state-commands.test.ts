// DEL, GC and STATUS on a real state dir, with a real flock and a fake rest:
// what they do with unsafe dirs, invalid records, held locks and background work.
import { Gate } from '../../../src/daemon/admission';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { lockWaitMs } from '../../../src/announce/attachment-lock';
import { writeRecord, type AttachmentRecord } from '../../../src/announce/state';
import { realTimers } from '../../../src/process/real-timers';
import { parseConfig } from '../../../src/cni/config';
import type { DelRequest, GcRequest, StatusRequest } from '../../../src/cni/dispatch';
import { del } from '../../../src/commands/del';
import type { CommandDeps } from '../../../src/commands/deps';
import { gc } from '../../../src/commands/gc';
import { status } from '../../../src/commands/status';
import { createLogger } from '../../../src/log';
import { MemoryLocks } from '../../../src/daemon/memory-locks';
import { UNLIMITED } from '../../../src/announce/budget';
import { fakeLibc } from '../../support/fake-libc';
import { identityView } from '../../support/caller-view-fakes';
import { RecordMemory } from '../../../src/announce/record-memory';
import { attachmentRecord } from '../../support/records';

const locks = new MemoryLocks((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
const timers = realTimers(() => Date.now());

let base: string;
let stateDir: string;
let lines: string[];
let lockCalls: { path: string; timeoutMs: number }[];
/** The records whose background work a command cancelled (JobHost.cancel). */
let cancelled: string[];

function deps(overrides: Partial<CommandDeps> = {}): CommandDeps {
  return {
    view: identityView,
    libc: () => fakeLibc({ openPacketSocket: () => 99, close: () => undefined }),
    timers,
    logger: (_config, ids) =>
      createLogger((line) => lines.push(line), 'debug', { containerId: ids.containerId, ifname: ids.ifname }),
    waits: { readable: () => expect.fail('DEL waits on no fd') },
    gate: new Gate(() => true),
    host: {
      added: () => expect.fail('DEL and GC hand over no job'),
      cancel: (name) => (cancelled.push(name), true),
    },
    frameBudget: () => UNLIMITED,
    release: () => expect.fail('DEL releases no socket'),
    lockFile: (path, timeoutMs) => {
      lockCalls.push({ path, timeoutMs });
      return locks.take(path, timeoutMs);
    },
    written: new RecordMemory(),
    ...overrides,
  };
}

const config = (extra: Record<string, unknown> = {}) =>
  parseConfig({ cniVersion: '1.1.0', name: 'net', type: 'announcer', stateDir, ...extra });

function delRequest(extra: Record<string, unknown> = {}): DelRequest {
  return {
    config: config(extra),
    cniVersion: '1.1.0',
    options: {} as DelRequest['options'],
    notes: [],
    env: { command: 'DEL', containerId: 'c1', ifname: 'eth0', args: {} } as DelRequest['env'],
  };
}

function gcRequest(valid: { containerId: string; ifname: string }[]): GcRequest {
  return {
    config: config(),
    cniVersion: '1.1.0',
    options: {} as GcRequest['options'],
    notes: [],
    env: { command: 'GC', args: {} } as GcRequest['env'],
    validAttachments: valid,
  };
}

/** A record of c1@eth0 with no original MAC; `extra` replaces any field. */
function record(extra: Partial<AttachmentRecord> = {}): AttachmentRecord {
  const ids = { network: 'net', containerId: 'c1', netns: '/var/run/netns/none', netnsId: { dev: 4, ino: 1 } };
  return attachmentRecord({ ...ids, originalMacs: [], ...extra });
}

/** A job for the background announcer, as ADD records it. */
const JOB = {
  network: 'net',
  containerId: 'c1',
  ifname: 'eth0',
  netns: '/var/run/netns/none',
  netnsId: { dev: 4, ino: 1 },
  interfaces: [{ name: 'eth0', ipv4: ['10.88.0.5'], ipv6: [] }],
  hostPeerNames: [],
  arpOps: ['request' as const],
  schedule: [0, 1000],
  firstRoundAt: 1,
  readyDeadline: 2,
  logLevel: 'info' as const,
};

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'state-commands-'));
  stateDir = join(base, 'state');
  mkdirSync(stateDir, { mode: 0o700 });
  lines = [];
  lockCalls = [];
  cancelled = [];
});

afterEach(() => {
  vi.restoreAllMocks();
  rmSync(base, { recursive: true, force: true });
});

describe('DEL', () => {
  it('cancels the background work, removes the record and the lock file, and says so at info', async () => {
    writeRecord(stateDir, record({ job: JOB }), new RecordMemory());
    await del(deps(), delRequest());
    expect(readdirSync(stateDir)).toEqual([]);
    expect(lockCalls).toEqual([{ path: join(stateDir, 'c1@eth0.lock'), timeoutMs: lockWaitMs(2000) }]);
    expect(cancelled).toEqual(['c1@eth0.json']);
    expect(lines.at(-1)).toMatch(
      /INFO DEL done containerId=c1 ifname=eth0 background=cancelled macsRestored=none recordRemoved=true\n$/,
    );
  });

  it("removes an invalid record without signalling anything, and ends the table's work all the same", async () => {
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => {
      throw new Error('kill must not be called');
    });
    writeFileSync(join(stateDir, 'c1@eth0.json'), JSON.stringify({ ...record(), job: { ...JOB, schedule: 'soon' } }));
    await del(deps(), delRequest());
    expect(kill).not.toHaveBeenCalled();
    expect(cancelled).toEqual(['c1@eth0.json']);
    expect(readdirSync(stateDir)).toEqual([]);
    expect(lines.join('')).toMatch(
      /WARN invalid state record: removing it without acting on it .*problem="\\"job.schedule\\" must be an array"/,
    );
    expect(lines.at(-1)).toMatch(
      /INFO DEL: no state record, nothing to undo containerId=c1 ifname=eth0 .*background=cancelled/,
    );
  });

  it('goes ahead without the lock when it stays held, and removes the record', async () => {
    const held = (await locks.take(join(stateDir, 'c1@eth0.lock'), 0))!;
    try {
      writeRecord(stateDir, record(), new RecordMemory());
      await del(deps({ lockFile: async () => undefined }), delRequest());
      expect(readdirSync(stateDir)).toEqual([]); // no lock file: the lock is in memory
      expect(lines.join('')).toMatch(
        /WARN another command on this attachment still runs after 24000 ms: deleting without the lock/,
      );
    } finally {
      held.release();
    }
  });

  it('does nothing in an unsafe stateDir, saying what to fix', async () => {
    chmodSync(stateDir, 0o777);
    writeRecord(stateDir, record(), new RecordMemory());
    await del(deps(), delRequest());
    expect(lockCalls).toEqual([]);
    expect(readdirSync(stateDir)).toEqual(['c1@eth0.json']);
    expect(lines.join('')).toMatch(
      `ERROR DEL did nothing: unsafe stateDir: ${stateDir} is writable by group or others (mode 0777): ` +
        `chmod 0700 ${stateDir} containerId=c1 ifname=eth0`,
    );
  });

  const passedOnTitle =
    'a DEL the announcer stopped before it acted (passed on while it waited for the lock) removes, restores and ' +
    'cancels nothing: the next announcer runs it';
  it(passedOnTitle, async () => {
    writeRecord(stateDir, record({ job: JOB }), new RecordMemory());
    const gate = new Gate(() => true);
    gate.stop('the announcer (pid 7) stops: passed on');
    await expect(del(deps({ gate }), delRequest())).rejects.toThrow('stops: passed on');
    expect({ files: readdirSync(stateDir), cancelled, acted: gate.acted }).toEqual({
      files: ['c1@eth0.json'],
      cancelled: [],
      acted: false,
    });
  });

  it('creates a missing stateDir 0700 and finds nothing to undo', async () => {
    rmSync(stateDir, { recursive: true });
    await del(deps(), delRequest());
    expect(readdirSync(stateDir)).toEqual([]);
  });
});

describe('GC', () => {
  const collectsStaleAndTitle =
    "collects stale and invalid records, orphan locks and dead writers' temp files; keeps live and busy ones";
  it(collectsStaleAndTitle, async () => {
    writeRecord(stateDir, record({ containerId: 'stale', job: { ...JOB, containerId: 'stale' } }), new RecordMemory());
    writeRecord(stateDir, record({ containerId: 'live' }), new RecordMemory());
    writeRecord(stateDir, record({ containerId: 'other', network: 'elsewhere' }), new RecordMemory());
    writeRecord(stateDir, record({ containerId: 'busy' }), new RecordMemory());
    writeFileSync(join(stateDir, 'bad@eth0.json'), '{"tail":{"pid":0}}');
    writeFileSync(join(stateDir, 'orphan@eth0.lock'), '');
    writeFileSync(join(stateDir, '.stale@eth0.json.4194305.00aa11bb.tmp'), '');
    writeFileSync(join(stateDir, `.live@eth0.json.${process.pid}.00aa11bb.tmp`), '');
    const busy = (await locks.take(join(stateDir, 'busy@eth0.lock'), 0))!;
    try {
      await gc(deps(), gcRequest([{ containerId: 'live', ifname: 'eth0' }]));
    } finally {
      busy.release();
    }
    expect(readdirSync(stateDir).sort()).toEqual(
      [`.live@eth0.json.${process.pid}.00aa11bb.tmp`, 'busy@eth0.json', 'live@eth0.json', 'other@eth0.json'].sort(),
    );
    expect(cancelled).toEqual(['stale@eth0.json']);
    const log = lines.join('');
    expect(log).toMatch(
      /INFO collected stale attachment containerId=stale ifname=eth0 background=cancelled recordRemoved=true/,
    );
    expect(log).toMatch(/WARN invalid state record/);
  });

  it('is code 105 on an unsafe stateDir, and does nothing without one', async () => {
    chmodSync(stateDir, 0o757);
    await expect(gc(deps(), gcRequest([]))).rejects.toMatchObject({
      code: 105,
      message: expect.stringContaining('chmod 0700'),
    });
    rmSync(stateDir, { recursive: true });
    await gc(deps(), gcRequest([]));
    expect(() => readdirSync(stateDir)).toThrow(/ENOENT/);
  });
});

describe('STATUS', () => {
  const request = (): StatusRequest => ({
    config: config(),
    cniVersion: '1.1.0',
    options: {} as StatusRequest['options'],
    notes: [],
    env: { command: 'STATUS', args: {} } as StatusRequest['env'],
  });

  const released: number[][] = [];
  const statusDeps = (): CommandDeps => deps({ release: (fds) => void released.push([...fds]) });

  const isReadyWithTitle =
    'is ready with a private stateDir, the packet socket it opened handed to release (its last close is slow)';
  it(isReadyWithTitle, async () => {
    released.length = 0;
    await expect(status(statusDeps(), request())).resolves.toBeUndefined();
    expect(released).toEqual([[99]]);
  });

  it('is code 50 naming the fix for a stateDir others can write or that is a file', async () => {
    chmodSync(stateDir, 0o777);
    await expect(status(statusDeps(), request())).rejects.toMatchObject({
      code: 50,
      message:
        `announcer not available: unsafe stateDir: ${stateDir} is writable by group or others (mode 0777): ` +
        `chmod 0700 ${stateDir}`,
    });
    rmSync(stateDir, { recursive: true });
    closeSync(openSync(stateDir, 'w'));
    await expect(status(statusDeps(), request())).rejects.toMatchObject({
      code: 50,
      message: expect.stringContaining('is not a directory'),
    });
  });
});
