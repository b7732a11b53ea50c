// The names of stateDir's files: the announcer's own never pass for a record or a temporary file, and the name
// functions map records and temporary files back as GC reads them.
import { describe, expect, it } from 'vitest';
import {
  ANNOUNCER_SOCKET,
  attachmentOfRecord,
  DAEMON_LOCK,
  HANDOVER_FILE,
  NODE_SETTINGS_FILE,
  recordName,
  RESIDENT_LOCK,
  START_MARKER,
  stateEntryKind,
  tempName,
  tempWriterPid,
} from '../../src/state-files';

describe('stateDir file names', () => {
  it("classify the announcer's own files as neither record nor temporary file", () => {
    const own = [ANNOUNCER_SOCKET, START_MARKER, DAEMON_LOCK, RESIDENT_LOCK, HANDOVER_FILE, NODE_SETTINGS_FILE];
    expect(new Set(own).size).toBe(own.length);
    for (const name of [...own, 'lib', '.hidden', 'c1@eth0.lock']) expect(stateEntryKind(name)).toBe('other');
  });

  it("map an attachment's record back to the attachment, and classify records by name", () => {
    expect(recordName('c1', 'eth0')).toBe('c1@eth0.json');
    expect(attachmentOfRecord(recordName('c1', 'eth0'))).toBe('c1@eth0');
    expect(stateEntryKind(recordName('x'.repeat(300), 'eth0'))).toBe('record');
    expect(stateEntryKind('sha256-ab.json')).toBe('record');
  });

  it("name a temporary file with its writer's pid, and read the pid back", () => {
    const name = tempName('c1@eth0.json', 4242, '0011aabb');
    expect(name).toBe('.c1@eth0.json.4242.0011aabb.tmp');
    expect(stateEntryKind(name)).toBe('temp');
    expect(tempWriterPid(name)).toBe(4242);
    expect(tempWriterPid('.c1@eth0.json.tmp')).toBeUndefined();
    expect(tempWriterPid('c1@eth0.json')).toBeUndefined();
  });
});
