import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it, expect } from 'vitest';
import { listRecords, readRecord, recordPath, removeRecord, writeRecord, type AttachmentRecord } from '../../../src/announce/state';

const RECORD: AttachmentRecord = {
  network: 'podnet',
  containerId: 'c0ffee',
  ifname: 'eth0',
  netns: '/var/run/netns/pod',
  originalMacs: [{ name: 'eth0', mac: '86:03:17:7a:eb:6e' }],
  tail: { pid: 4242, startTime: '123456' },
};

const mode = (path: string): number => statSync(path).mode & 0o777;

let tmp: string;
let stateDir: string;

beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), 'announcer-state-'));
  stateDir = join(tmp, 'state');
});

afterEach(() => {
  rmSync(tmp, { recursive: true, force: true });
});

describe('recordPath', () => {
  it('names the file <containerId>@<ifname>.json in the state dir', () => {
    expect(recordPath('/run/cni-announcer', 'c0ffee', 'eth0')).toBe('/run/cni-announcer/c0ffee@eth0.json');
    expect(recordPath('/run/cni-announcer/', 'c0ffee', 'net1')).toBe('/run/cni-announcer/c0ffee@net1.json');
  });
});

describe('writeRecord and readRecord', () => {
  it('round-trips a record through its file', () => {
    const file = writeRecord(stateDir, RECORD);
    expect(file).toBe(join(stateDir, 'c0ffee@eth0.json'));
    expect(readRecord(file)).toEqual(RECORD);
    expect(readFileSync(file, 'utf8')).toBe(`${JSON.stringify(RECORD)}\n`);
  });

  it('creates the state dir 0700 and the file 0600', () => {
    const file = writeRecord(stateDir, RECORD);
    expect(mode(stateDir)).toBe(0o700);
    expect(mode(file)).toBe(0o600);
  });

  it('replaces an existing file, leaving it 0600 and no temporary file behind', () => {
    mkdirSync(stateDir);
    writeFileSync(recordPath(stateDir, 'c0ffee', 'eth0'), 'old', { mode: 0o644 });
    const file = writeRecord(stateDir, { ...RECORD, tail: undefined });
    expect(readRecord(file)).toEqual({ ...RECORD, tail: undefined });
    expect(mode(file)).toBe(0o600);
    expect(readdirSync(stateDir)).toEqual(['c0ffee@eth0.json']);
  });

  it('reads a missing file as undefined', () => {
    expect(readRecord(join(tmp, 'nope@eth0.json'))).toBeUndefined();
  });

  it('reads garbage, null and records without a containerId as undefined', () => {
    const garbage = join(tmp, 'garbage.json');
    writeFileSync(garbage, '{"containerId": "c0ff');
    expect(readRecord(garbage)).toBeUndefined();
    writeFileSync(garbage, 'null');
    expect(readRecord(garbage)).toBeUndefined();
    writeFileSync(garbage, '{"network":"podnet","ifname":"eth0"}');
    expect(readRecord(garbage)).toBeUndefined();
  });

  it('reads an unreadable path (a directory) as undefined', () => {
    const dir = join(tmp, 'dir@eth0.json');
    mkdirSync(dir);
    expect(readRecord(dir)).toBeUndefined();
  });
});

describe('listRecords', () => {
  it('lists every record and skips files it cannot read or parse', () => {
    const a = writeRecord(stateDir, RECORD);
    const b = writeRecord(stateDir, { ...RECORD, containerId: 'beef', ifname: 'net1', tail: undefined });
    writeFileSync(join(stateDir, 'garbage@eth0.json'), 'not json');
    writeFileSync(join(stateDir, 'notes.txt'), JSON.stringify(RECORD));
    mkdirSync(join(stateDir, 'dir@eth0.json'));

    const listed = listRecords(stateDir).sort((x, y) => x.file.localeCompare(y.file));
    expect(listed).toEqual([
      { file: b, record: { ...RECORD, containerId: 'beef', ifname: 'net1', tail: undefined } },
      { file: a, record: RECORD },
    ]);
  });

  it('lists nothing for a missing state dir', () => {
    expect(listRecords(join(tmp, 'missing'))).toEqual([]);
  });
});

describe('removeRecord', () => {
  it('removes the file, and a second remove is fine', () => {
    const file = writeRecord(stateDir, RECORD);
    removeRecord(file);
    expect(readRecord(file)).toBeUndefined();
    expect(listRecords(stateDir)).toEqual([]);
    expect(() => removeRecord(file)).not.toThrow();
  });
});
