import { enterGate, type CommandContext } from '../announce/context';
import { readRecordFile, readRecordToActOn, removeRecordQuietly, stateEntries } from '../announce/state';
import type { GcRequest } from '../cni/dispatch';
import { CniError, ErrorCode } from '../cni/errors';
import type { Logger } from '../log';
import { basename, join } from '../path';
import { attachmentName, attachmentOfRecord, stateEntryKind, tempWriterPid } from '../state-files';
import { checkPrivateDir, stateDirProblem } from '../sys/private-dir';
import { processStartTime } from '../sys/lock-holder';
import { unlinkIfPresent } from '../sys/safe-file';
import { cancelBackground } from './del';
import { toCniError } from './errors';

/**
 * GC: drops this network's attachments the runtime no longer lists, invalid records and dead writers' temps; skips
 * locked ones; 105 for an unsafe stateDir.
 */
export async function gc(ctx: CommandContext, req: GcRequest): Promise<void> {
  const { config } = req;
  const log = ctx.logger(config, {});
  try {
    if (checkPrivateDir(config.stateDir) === 'missing') return;
  } catch (err) {
    throw new CniError(ErrorCode.StateFailure, stateDirProblem(config.stateDir, err), { cause: err });
  }
  const live = new Set(req.validAttachments.map((a) => attachmentName(a.containerId, a.ifname)));
  try {
    for (const name of stateEntries(config.stateDir)) {
      const path = join(config.stateDir, name);
      const kind = stateEntryKind(name);
      if (kind === 'record') await collect(ctx, config.name, live, path, log);
      else if (kind === 'temp') dropStaleTemp(path, log);
    }
  } catch (err) {
    throw toCniError(err, 'GC');
  }
}

/** Drops the attachment of the record `file` when it is this network's and the runtime no longer lists it. */
async function collect(
  ctx: CommandContext,
  network: string,
  live: ReadonlySet<string>,
  file: string,
  log: Logger,
): Promise<void> {
  const attachment = attachmentOfRecord(basename(file));
  const stale = (record: { network: string }): boolean => record.network === network && !live.has(attachment);
  const glance = readRecordFile(file, ctx.written);
  if (glance.kind === 'none' || (glance.kind === 'ok' && !stale(glance.record))) return;
  const lock = await ctx.attachmentLocks.take(attachment, 0);
  if (!lock) {
    log.debug('attachment busy: left for the next GC', { file });
    return;
  }
  try {
    const record = readRecordToActOn(file, log, ctx.written);
    if (!record || !stale(record)) return;
    enterGate(ctx.gate, 'GC');
    const removed = removeRecordQuietly(file, log, ctx.written); // first: see DEL
    const background = cancelBackground(ctx, file);
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
