import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRecordFile, readRecordToActOn, removeRecordQuietly, writeRecord } from '../../../src/announce/state';
import { silentLogger } from '../../../src/log';
import { RecordMemory } from '../../../src/announce/record-memory';
import { attachmentRecord } from '../../support/records';
import { useTempDir } from '../../support/temp-dir';

// A record the schema refuses (its MAC is not one): read back as valid only when the memory vouches for its bytes.
const UNCHECKED = attachmentRecord({ originalMacs: [{ name: 'eth0', mac: 'not a mac' }] });
const TEXT = `${JSON.stringify(UNCHECKED)}\n`;

let stateDir: string;
let memory: RecordMemory;

useTempDir('announcer-memory-', (d) => {
  stateDir = d;
  memory = new RecordMemory();
});

describe('RecordMemory', () => {
  it('vouches for the text last written to a file, and for nothing else', () => {
    memory.wrote('/s/a.json', 'one');
    expect(memory.wroteThis('/s/a.json', 'one')).toBe(true);
    expect(memory.wroteThis('/s/a.json', 'two')).toBe(false);
    expect(memory.wroteThis('/s/b.json', 'one')).toBe(false);
    memory.wrote('/s/a.json', 'two');
    expect(memory.wroteThis('/s/a.json', 'one')).toBe(false);
    expect(memory.wroteThis('/s/a.json', 'two')).toBe(true);
    memory.forget('/s/a.json');
    expect(memory.wroteThis('/s/a.json', 'two')).toBe(false);
  });

  it('holds at most its limit: past it, the file written longest ago is forgotten', () => {
    const small = new RecordMemory(2);
    small.wrote('/s/a.json', 'a');
    small.wrote('/s/b.json', 'b');
    small.wrote('/s/a.json', 'a2'); // written again: now the newest
    small.wrote('/s/c.json', 'c');
    expect(small.wroteThis('/s/b.json', 'b')).toBe(false);
    expect(small.wroteThis('/s/a.json', 'a2')).toBe(true);
    expect(small.wroteThis('/s/c.json', 'c')).toBe(true);
  });
});

describe('reading records through the memory', () => {
  it('takes a record with the bytes it wrote without checking it again; without the memory it is checked', () => {
    const file = writeRecord(stateDir, UNCHECKED, memory);
    expect(readRecordFile(file, memory)).toEqual({ kind: 'ok', record: UNCHECKED });
    expect(readRecordToActOn(file, silentLogger, memory)).toEqual(UNCHECKED);
    expect(readRecordFile(file)).toMatchObject({ kind: 'invalid', problem: /MAC/ });
  });

  it('checks in full a record another hand changed, and vouches no more once its bytes changed', () => {
    const file = writeRecord(stateDir, UNCHECKED, memory);
    writeFileSync(file, JSON.stringify({ ...UNCHECKED, network: 'other' }));
    expect(readRecordFile(file, memory)).toMatchObject({ kind: 'invalid', problem: /MAC/ });
    writeFileSync(file, TEXT); // the bytes it wrote, back from another hand
    expect(readRecordFile(file, memory)).toMatchObject({ kind: 'invalid' });
  });

  it('forgets a record it removed, one found gone, and one it failed to write', () => {
    const file = writeRecord(stateDir, UNCHECKED, memory);
    expect(removeRecordQuietly(file, silentLogger, memory)).toBe(true);
    writeFileSync(file, TEXT);
    expect(readRecordFile(file, memory)).toMatchObject({ kind: 'invalid' });

    writeRecord(stateDir, UNCHECKED, memory);
    rmSync(file);
    expect(readRecordFile(file, memory)).toEqual({ kind: 'none' });
    writeFileSync(file, TEXT);
    expect(readRecordFile(file, memory)).toMatchObject({ kind: 'invalid' });

    writeRecord(stateDir, UNCHECKED, memory);
    rmSync(file);
    mkdirSync(join(file, 'blocker'), { recursive: true }); // the rename onto it fails
    expect(() => writeRecord(stateDir, { ...UNCHECKED, network: 'next' }, memory)).toThrow();
    rmSync(file, { recursive: true });
    writeFileSync(file, TEXT);
    expect(readRecordFile(file, memory)).toMatchObject({ kind: 'invalid' });
  });
});
