// Writing and removing ADD's record of an attachment: failures that must fail
// ADD become a StateError (with the errno as cause), the others are logged.
import type { Logger } from '../log';
import { unlinkIfPresent } from '../sys/safe-file';
import { StateError } from './errors';
import type { RecordMemory } from './record-memory';
import { writeRecord, type AttachmentRecord } from './state';

/** Writes `record`; a StateError when it cannot. */
export function persist(stateDir: string, record: AttachmentRecord, memory: RecordMemory): void {
  try {
    writeRecord(stateDir, record, memory);
  } catch (err) {
    throw new StateError(`cannot write state in ${stateDir}: ${(err as Error).message}`, { cause: err });
  }
}

/** Removes the attachment's record; a StateError carrying the errno when it cannot. */
export function unpersist(file: string, memory: RecordMemory): void {
  try {
    memory.forget(file);
    unlinkIfPresent(file);
  } catch (err) {
    throw new StateError(`cannot remove the state record ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/** Writes `record` on a failing ADD's way out (the original MACs must survive for DEL); a failure is logged. */
export function writeRecordQuietly(
  stateDir: string,
  record: AttachmentRecord,
  log: Logger,
  memory: RecordMemory,
): void {
  try {
    writeRecord(stateDir, record, memory);
  } catch (err) {
    log.error('cannot record the original MACs', { error: err });
  }
}
