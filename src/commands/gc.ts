import { basename, join } from '../path';
import {
  attachmentName,
  attachmentOfRecord,
  lockBesideRecord,
  recordBesideLock,
  stateEntryKind,
  tempWriterPid,
} from '../state-files';
import { readRecordFile, readRecordToActOn, removeRecordQuietly, stateEntries } from '../announce/state';
import { cancelBackground } from './del';
import { enterGate } from '../announce/wanted';
import type { GcRequest } from '../cni/dispatch';
import { CniError, ErrorCode } from '../cni/errors';
import type { Logger } from '../log';
import { checkPrivateDir, stateDirProblem } from '../sys/private-dir';
import { processStartTime } from '../sys/processes';
import { unlinkIfPresent } from '../sys/safe-file';
import type { CommandDeps } from './deps';
import { toCniError } from './errors';

/**
 * GC: drops this network's attachments the runtime no longer lists, invalid records, orphan lock files and dead
 * writers' temps; skips locked ones; 105 for an unsafe stateDir.
 */
export async function gc(deps: CommandDeps, req: GcRequest): Promise<void> {
  const { config } = req;
  const log = deps.logger(config, {});
  try {
    if (checkPrivateDir(config.stateDir) === 'missing') return;
  } catch (err) {
    throw new CniError(ErrorCode.StateFailure, stateDirProblem(config.stateDir, err), { cause: err });
  }
  const live = new Set(req.validAttachments.map((a) => attachmentName(a.containerId, a.ifname)));
  try {
    await collectAll(deps, config, live, log);
  } catch (err) {
    throw toCniError(err, 'GC');
  }
}

/** Goes through stateDir's entries: this network's stale records, older versions' lock files, dead writers' temps. */
async function collectAll(
  deps: CommandDeps,
  config: GcRequest['config'],
  live: ReadonlySet<string>,
  log: Logger,
): Promise<void> {
  for (const name of stateEntries(config.stateDir)) {
    const path = join(config.stateDir, name);
    switch (stateEntryKind(name)) {
      case 'record':
        await collect(deps, config.name, live, path, log);
        break;
      case 'lock':
        dropOldLockFile(path, log);
        break;
      case 'temp':
        dropStaleTemp(path, log);
        break;
      case 'other':
        break;
    }
  }
}

async function collect(
  deps: CommandDeps,
  network: string,
  live: ReadonlySet<string>,
  file: string,
  log: Logger,
): Promise<void> {
  const glance = readRecordFile(file, deps.written);
  if (glance.kind === 'none') return;
  if (glance.kind === 'ok' && (glance.record.network !== network || live.has(attachmentOfRecord(basename(file)))))
    return;
  const lockFile = lockBesideRecord(file);
  const lock = await deps.lockFile(lockFile, 0).catch((err: unknown) => {
    log.warn('cannot lock attachment: left for the next GC', { file, error: err });
    return undefined;
  });
  if (!lock) {
    log.debug('attachment busy: left for the next GC', { file });
    return;
  }
  try {
    const record = readRecordToActOn(file, log, deps.written);
    if (!record || record.network !== network || live.has(attachmentOfRecord(basename(file)))) return;
    enterGate(deps.gate, 'GC');
    const removed = removeRecordQuietly(file, log, deps.written); // first: see DEL
    const background = cancelBackground(deps, file);
    log.info('collected stale attachment', {
      containerId: record.containerId,
      ifname: record.ifname,
      background,
      recordRemoved: removed,
    });
  } finally {
    lock.release();
  }
}

/**
 * A `<name>.lock` file was left by an older version (attachment locks are the announcer's, in memory, now): removed
 * once the attachment has no record; one beside a record stays until the record goes (an older CNI process may still
 * hold it during an upgrade).
 */
function dropOldLockFile(path: string, log: Logger): void {
  const record = recordBesideLock(path);
  if (readRecordFile(record).kind !== 'none') return;
  try {
    unlinkIfPresent(path);
    log.info('removed a lock file an older version left', { path });
  } catch (err) {
    log.warn('cannot remove a lock file an older version left', { path, error: err });
  }
}

/** A temporary file (`.<name>.<pid>.<hex>.tmp`) whose writer no longer runs was left by a crash: remove it. */
function dropStaleTemp(path: string, log: Logger): void {
  const pid = tempWriterPid(basename(path));
  if (pid !== undefined && processStartTime(pid) !== undefined) return;
  try {
    unlinkIfPresent(path);
    log.info('removed a temporary file left by a crashed writer', { path });
  } catch (err) {
    log.warn('cannot remove temporary file', { path, error: err });
  }
}
