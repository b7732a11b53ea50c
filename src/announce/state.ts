// Per-attachment records under stateDir: the original MACs to restore on DEL
// and the background tail to stop. One file per container ID + ifname.
import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { ensureDir } from '../sys/ensure-dir';
import { join } from 'node:path';
import type { ProcessId } from '../sys/processes';
import type { TailJob } from './tail-job';

/** What is recorded about one attachment. */
export interface AttachmentRecord {
  network: string;
  containerId: string;
  ifname: string;
  netns: string;
  /** MACs the plugin replaced, to put back on DEL. */
  originalMacs: { name: string; mac: string }[];
  /** The background tail's work order: the tail reads it from here, not from its command line. */
  job?: TailJob | undefined;
  /** Epoch ms until which a tail started early waits for ADD to write `job`. */
  jobDeadline?: number | undefined;
  /** The background tail, while one may be running. */
  tail?: ProcessId | undefined;
}

/** The record file of an attachment. '@' cannot occur in a container ID, so names never collide. */
export function recordPath(stateDir: string, containerId: string, ifname: string): string {
  return join(stateDir, `${containerId}@${ifname}.json`);
}

/** Reads a record; undefined when there is none (or it is unreadable). */
export function readRecord(file: string): AttachmentRecord | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const r = JSON.parse(text) as AttachmentRecord;
    return typeof r === 'object' && r !== null && typeof r.containerId === 'string' ? r : undefined;
  } catch {
    return undefined;
  }
}

/** Writes a record atomically with mode 0600, creating stateDir (0700) if needed. */
export function writeRecord(stateDir: string, record: AttachmentRecord): string {
  ensureDir(stateDir, 0o700);
  const file = recordPath(stateDir, record.containerId, record.ifname);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
  return file;
}

/** Removes a record; a missing one is fine. */
export function removeRecord(file: string): void {
  rmSync(file, { force: true });
}

/** Every record file in stateDir with its content. */
export function listRecords(stateDir: string): { file: string; record: AttachmentRecord }[] {
  let names: string[];
  try {
    names = readdirSync(stateDir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith('.json'))
    .flatMap((n) => {
      const file = join(stateDir, n);
      const record = readRecord(file);
      return record ? [{ file, record }] : [];
    });
}
