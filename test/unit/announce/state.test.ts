import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it, expect } from 'vitest';
import {
  listRecords,
  readRecordFile,
  readRecordToActOn,
  recordPath,
  removeRecordQuietly,
  stateEntries,
  writeRecord,
  type AttachmentRecord,
} from '../../../src/announce/state';
import { silentLogger } from '../../../src/log';
import { attachmentName } from '../../../src/state-files';
import { RecordMemory } from '../../../src/announce/record-memory';
import { pendingJob, recordingLog } from '../../support/add-harness';
import { attachmentRecord } from '../../support/records';
import { useTempDir } from '../../support/temp-dir';

const RECORD = attachmentRecord();

const mode = (path: string): number => statSync(path).mode & 0o777;

/** The record at `file` when it is valid. */
function readRecord(file: string): AttachmentRecord | undefined {
  const read = readRecordFile(file);
  return read.kind === 'ok' ? read.record : undefined;
}

let tmp: string;
let stateDir: string;

useTempDir('announcer-state-', (d) => {
  tmp = d;
  stateDir = join(tmp, 'state');
  mkdirSync(stateDir, { mode: 0o700 });
});

describe('attachmentName and recordPath', () => {
  it('names the file <containerId>@<ifname>.json in the state dir', () => {
    expect(recordPath('/run/cni-announcer', 'c0ffee', 'eth0')).toBe('/run/cni-announcer/c0ffee@eth0.json');
    expect(recordPath('/run/cni-announcer/', 'c0ffee', 'net1')).toBe('/run/cni-announcer/c0ffee@net1.json');
  });

  it('hashes a long container ID into a bounded name', () => {
    const long = 'a'.repeat(250);
    const name = attachmentName(long, 'eth0');
    expect(name).toMatch(/^sha256-[0-9a-f]{64}$/);
    expect(name).toBe(attachmentName(long, 'eth0'));
    expect(name).not.toBe(attachmentName(long, 'eth1'));
    expect(attachmentName('b'.repeat(100_000), 'eth0')).toMatch(/^sha256-[0-9a-f]{64}$/);
  });

  it('keeps names up to 128 bytes readable and hashes one that is not plain', () => {
    const id = 'c'.repeat(123);
    expect(attachmentName(id, 'eth0')).toBe(`${id}@eth0`);
    expect(attachmentName(`${id}c`, 'eth0')).toMatch(/^sha256-/);
    expect(attachmentName('../x', 'eth0')).toMatch(/^sha256-/);
  });
});

describe('writeRecord and readRecordFile', () => {
  it('round-trips a record through its file, 0600', () => {
    const file = writeRecord(stateDir, RECORD, new RecordMemory());
    expect(file).toBe(join(stateDir, 'c0ffee@eth0.json'));
    expect(readRecordFile(file)).toEqual({ kind: 'ok', record: RECORD });
    expect(readFileSync(file, 'utf8')).toBe(`${JSON.stringify(RECORD)}\n`);
    expect(mode(file)).toBe(0o600);
  });

  it('round-trips a record of a 250-character container ID under a hashed name', () => {
    const record = { ...RECORD, containerId: 'f'.repeat(250) };
    const file = writeRecord(stateDir, record, new RecordMemory());
    expect(file).toBe(recordPath(stateDir, record.containerId, 'eth0'));
    expect(readRecord(file)).toEqual(record);
  });

  it('replaces an existing file, leaving it 0600 and no temporary file behind', () => {
    writeFileSync(recordPath(stateDir, 'c0ffee', 'eth0'), 'old', { mode: 0o644 });
    const file = writeRecord(stateDir, RECORD, new RecordMemory());
    expect(readRecord(file)).toEqual(RECORD);
    expect(mode(file)).toBe(0o600);
    expect(readdirSync(stateDir)).toEqual(['c0ffee@eth0.json']);
  });

  it('does not create a missing state dir (the caller checks it first)', () => {
    expect(() => writeRecord(join(tmp, 'missing'), RECORD, new RecordMemory())).toThrow(/ENOENT/);
  });

  it.each([
    ['garbage', '{"containerId": "c0ff', /not JSON/],
    ['null', 'null', /the record must be an object/],
    ['a record the schema refuses', JSON.stringify({ ...RECORD, netnsId: undefined }), /"netnsId" must be an object/],
    [
      'another attachment',
      JSON.stringify({ ...RECORD, containerId: 'beef' }),
      /describes beef@eth0, which is stored under another name/,
    ],
  ])('reads %s as invalid, naming the problem', (_what, text, problem) => {
    const file = recordPath(stateDir, 'c0ffee', 'eth0');
    writeFileSync(file, text);
    const read = readRecordFile(file);
    expect(read.kind).toBe('invalid');
    expect(read.kind === 'invalid' && read.problem).toMatch(problem);
    expect(readRecord(file)).toBeUndefined();
  });

  it('reads a directory, a symlink or a FIFO at the record path as invalid without following or blocking', () => {
    const file = recordPath(stateDir, 'c0ffee', 'eth0');
    mkdirSync(file);
    expect(readRecordFile(file)).toEqual({ kind: 'invalid', problem: `cannot read it: ${file} is not a regular file` });
    rmSync(file, { recursive: true });
    writeFileSync(join(tmp, 'elsewhere.json'), JSON.stringify(RECORD));
    symlinkSync(join(tmp, 'elsewhere.json'), file);
    expect(readRecordFile(file)).toMatchObject({ kind: 'invalid', problem: /symbolic link/ });
    rmSync(file);
    execFileSync('mkfifo', [file]);
    expect(readRecordFile(file)).toMatchObject({ kind: 'invalid', problem: /not a regular file/ });
  });

  it('accepts a record with a full job, conflict settings included', () => {
    const job = pendingJob({ conflictCheck: { action: 'fail', probeMs: 100, probes: 2 } });
    const file = writeRecord(stateDir, { ...RECORD, job }, new RecordMemory());
    expect(readRecord(file)?.job).toEqual(job);
  });

  it('keeps fields it does not know (a newer writer)', () => {
    const file = recordPath(stateDir, 'c0ffee', 'eth0');
    writeFileSync(file, JSON.stringify({ ...RECORD, future: 1 }));
    expect(readRecord(file)).toEqual({ ...RECORD, future: 1 });
  });
});

describe('listRecords', () => {
  it('lists every record file with what reading it found, and nothing else', () => {
    const a = writeRecord(stateDir, RECORD, new RecordMemory());
    const b = writeRecord(stateDir, { ...RECORD, containerId: 'beef', ifname: 'net1' }, new RecordMemory());
    writeFileSync(join(stateDir, 'garbage@eth0.json'), 'not json');
    writeFileSync(join(stateDir, 'notes.txt'), JSON.stringify(RECORD));
    writeFileSync(join(stateDir, 'c0ffee@eth0.lock'), '');
    writeFileSync(join(stateDir, '.c0ffee@eth0.json.1.abcd0123.tmp'), '');

    const listed = listRecords(stateDir).sort((x, y) => x.file.localeCompare(y.file));
    expect(listed).toEqual([
      { file: b, read: { kind: 'ok', record: { ...RECORD, containerId: 'beef', ifname: 'net1' } } },
      { file: a, read: { kind: 'ok', record: RECORD } },
      {
        file: join(stateDir, 'garbage@eth0.json'),
        read: { kind: 'invalid', problem: expect.stringMatching(/not JSON/) },
      },
    ]);
  });

  it('lists nothing, and no entries, for a missing state dir', () => {
    expect(listRecords(join(tmp, 'missing'))).toEqual([]);
    expect(stateEntries(join(tmp, 'missing'))).toEqual([]);
  });
});

describe('removeRecordQuietly', () => {
  it('removes the file, and a second remove is fine', () => {
    const file = writeRecord(stateDir, RECORD, new RecordMemory());
    expect(removeRecordQuietly(file, silentLogger, new RecordMemory())).toBe(true);
    expect(readRecordFile(file)).toEqual({ kind: 'none' });
    expect(removeRecordQuietly(file, silentLogger, new RecordMemory())).toBe(true);
  });
});

describe('state edges', () => {
  it('readRecordToActOn finds nothing to act on in a missing record, and says nothing', () => {
    const { log, records } = recordingLog();
    expect(readRecordToActOn(join(stateDir, 'c0ffee@eth0.json'), log, new RecordMemory())).toBeUndefined();
    expect(records()).toEqual([]);
  });

  it('removeRecordQuietly logs a record it cannot remove, and says false', () => {
    const file = join(stateDir, 'c0ffee@eth0.json');
    mkdirSync(join(file, 'blocker'), { recursive: true });
    const { log, records } = recordingLog();
    expect(removeRecordQuietly(file, log, new RecordMemory())).toBe(false);
    const error = `EISDIR: illegal operation on a directory, unlink '${file}'`;
    expect(records()).toEqual([{ level: 'error', msg: 'cannot remove state record', fields: { file, error } }]);
  });

  it('hashes a name whose ifname part holds a slash, however it ends', () => {
    expect(attachmentName('c1', 'eth0/x')).toMatch(/^sha256-[0-9a-f]{64}$/);
    expect(attachmentName('c1', 'eth0\0')).toMatch(/^sha256-[0-9a-f]{64}$/);
  });
});
