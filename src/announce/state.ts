// Per-attachment records under stateDir: the original MACs to restore on DEL
// and the job of the background announcer. One record (and one lock, held in
// the announcer's memory: AttachmentLocks, context.ts) per container ID + ifname. A
// record is acted on only after it passed the schema of record-schema.ts and
// sits under its own name, or when it holds the very bytes the announcer wrote
// there (record-memory.ts).
import { readdirSync } from 'node:fs';
import { basename, join } from '../path';
import type { Logger } from '../log';
import { readSmallFile, replaceFile, unlinkIfPresent } from '../sys/safe-file';
import { recordName, stateEntryKind } from '../state-files';
import { checkRecord } from './record-schema';
import type { RecordMemory } from './record-memory';
import type { AttachmentIds, BackgroundJob } from './background-job';
import type { GatewayVerdict } from './gateway-verdict';

/** What is recorded about one attachment. */
export interface AttachmentRecord extends AttachmentIds {
  /** MACs the plugin replaced, to put back on DEL. */
  originalMacs: { name: string; mac: string }[];
  /** The background announcer's work order (src/daemon): ADD hands it over in memory; an announcer's start reads it. */
  job?: BackgroundJob | undefined;
  /** What the gateway check found (absent: off, or from before the check): status shows it while the record lives. */
  gateway?: GatewayVerdict | undefined;
}

/** Records are small; anything larger is not one of ours. */
export const MAX_RECORD_BYTES = 256 * 1024;

/** The record file of an attachment. */
export function recordPath(stateDir: string, containerId: string, ifname: string): string {
  return join(stateDir, recordName(containerId, ifname));
}

/** What reading a record found. */
export type RecordRead =
  | { kind: 'none' }
  | { kind: 'ok'; record: AttachmentRecord }
  /** Not to be acted on: the caller logs `problem` and removes the file. */
  | { kind: 'invalid'; problem: string };

/**
 * Reads a record: a regular file of at most MAX_RECORD_BYTES that passes the record schema and is named for the
 * attachment it describes, or that holds what `memory` says was written there.
 */
export function readRecordFile(file: string, memory?: RecordMemory): RecordRead {
  let text: string | undefined;
  try {
    text = readSmallFile(file, MAX_RECORD_BYTES);
  } catch (err) {
    memory?.forget(file);
    return { kind: 'invalid', problem: `cannot read it: ${(err as Error).message}` };
  }
  if (text !== undefined && memory?.wroteThis(file, text))
    return { kind: 'ok', record: JSON.parse(text) as AttachmentRecord };
  memory?.forget(file);
  if (text === undefined) return { kind: 'none' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { kind: 'invalid', problem: `not JSON: ${(err as Error).message}` };
  }
  const checked = checkRecord(value);
  if (!checked.ok) return { kind: 'invalid', problem: checked.problem };
  const { containerId, ifname } = checked.record;
  if (basename(file) !== recordName(containerId, ifname)) {
    return { kind: 'invalid', problem: `it describes ${containerId}@${ifname}, which is stored under another name` };
  }
  return { kind: 'ok', record: checked.record };
}

/**
 * A record for ADD, DEL or GC to act on (an invalid one is logged and removed); call it holding the attachment's lock.
 */
export function readRecordToActOn(file: string, log: Logger, memory: RecordMemory): AttachmentRecord | undefined {
  const read = readRecordFile(file, memory);
  if (read.kind === 'ok') return read.record;
  if (read.kind === 'invalid') {
    log.warn('invalid state record: removing it without acting on it', { file, problem: read.problem });
    removeRecordQuietly(file, log, memory);
  }
  return undefined;
}

/** Removes a record (a missing one is fine); a failure is logged, not thrown, and false. */
export function removeRecordQuietly(file: string, log: Logger, memory: RecordMemory): boolean {
  try {
    memory.forget(file);
    unlinkIfPresent(file);
    return true;
  } catch (err) {
    log.error('cannot remove state record', { file, error: err });
    return false;
  }
}

/**
 * Writes a record atomically, mode 0600, into a stateDir checked by checkPrivateDir, and remembers its bytes in
 * `memory`; a failure leaves no temporary file.
 */
export function writeRecord(stateDir: string, record: AttachmentRecord, memory: RecordMemory): string {
  const text = `${JSON.stringify(record)}\n`;
  const name = recordName(record.containerId, record.ifname);
  memory.forget(join(stateDir, name)); // a write that fails leaves the file as it was: checked in full when read
  const file = replaceFile(stateDir, name, text);
  memory.wrote(file, text);
  return file;
}

/** Every record file in stateDir with what reading it found; none when stateDir cannot be listed. */
export function listRecords(stateDir: string): { file: string; read: RecordRead }[] {
  return stateEntries(stateDir)
    .filter((n) => stateEntryKind(n) === 'record')
    .map((n) => join(stateDir, n))
    .map((file) => ({ file, read: readRecordFile(file) }));
}

/** The names in stateDir; none when it does not exist or cannot be read. */
export function stateEntries(stateDir: string): string[] {
  try {
    return readdirSync(stateDir);
  } catch {
    return [];
  }
}
