import { enterGate, lockWaitMs, type CommandContext } from '../announce/context';
import { readRecordToActOn, recordPath, removeRecordQuietly, type AttachmentRecord } from '../announce/state';
import { basename } from '../path';
import { attachmentName } from '../state-files';
import type { DelRequest } from '../cni/dispatch';
import type { Logger } from '../log';
import { sameFile } from '../sys/file-id';
import { checkNetnsPath, openPodRtnl } from '../sys/netns';
import { ensurePrivateDir, stateDirProblem } from '../sys/private-dir';
import { parseMac } from '../wire/ethernet';

/**
 * DEL: stop the attachment's background work, put back the MACs we replaced (host-device
 * NICs return to the node), forget the attachment. Best-effort and idempotent:
 * every step is attempted, failures are logged, DEL itself succeeds (libcni
 * stops a chain's DEL at the first error, and the main plugin's DEL must run).
 *
 * It holds the attachment's lock, so an ADD still running finishes first and
 * its background work is then found and cancelled. If the lock stays held longer than
 * lockWaitMs (a stuck ADD), DEL goes ahead without it.
 */
export async function del(ctx: CommandContext, req: DelRequest): Promise<void> {
  const { config, env } = req;
  const log = ctx.logger(config, env);
  if (req.prevResultError) log.warn('ignoring invalid prevResult on DEL', { error: req.prevResultError });
  try {
    // A stateDir another user could change is not acted on (ensurePrivateDir refuses it, naming the fix).
    ensurePrivateDir(config.stateDir);
  } catch (err) {
    log.error(`DEL did nothing: ${stateDirProblem(config.stateDir, err)}`);
    return;
  }
  const file = recordPath(config.stateDir, env.containerId, env.ifname);
  const waitMs = lockWaitMs(config.addWaitMs);
  const lock = await ctx.attachmentLocks.take(attachmentName(env.containerId, env.ifname), waitMs);
  if (!lock) log.warn(`another command on this attachment still runs after ${waitMs} ms: deleting without the lock`);
  try {
    // A stopping announcer passes on a DEL that has done nothing yet: the next one runs it.
    enterGate(ctx.gate, 'DEL');
    const record = readRecordToActOn(file, log, ctx.written);
    if (!record) {
      // The table is the truth: work it holds ends even when its record went.
      log.info('DEL: no state record, nothing to undo', { background: cancelBackground(ctx, file) });
      return;
    }
    const restored = record.originalMacs.length > 0 ? restoreMacs(ctx, record, env.netns ?? record.netns, log) : [];
    // The record goes first: an announcer killed from here on does not take the job up again at its next start.
    const removed = removeRecordQuietly(file, log, ctx.written);
    const background = cancelBackground(ctx, file);
    log.info('DEL done', { background, macsRestored: restored.join(',') || 'none', recordRemoved: removed });
  } finally {
    lock?.release();
  }
}

/** Ends the attachment's background work in the announcer's table, in memory: whether there was any. */
export function cancelBackground(ctx: CommandContext, file: string): 'cancelled' | 'none' {
  return ctx.table.cancel(basename(file)) ? 'cancelled' : 'none';
}

/**
 * Restores the recorded MACs, only into the netns the record was made for:
 * without CNI_NETNS the recorded path may name a new pod's netns by now, and
 * that pod's MAC is not ours to change. Returns the interfaces restored.
 */
function restoreMacs(ctx: CommandContext, record: AttachmentRecord, netns: string, log: Logger): string[] {
  let at: string; // the path as the caller sees it
  try {
    at = ctx.view.path(netns);
  } catch (err) {
    log.warn('cannot resolve the pod netns path: no MAC restored', { netns, error: err });
    return [];
  }
  const check = checkNetnsPath(ctx.libc, at);
  if (check.kind !== 'ok') {
    log.info('pod netns gone: no MAC to restore', { netns });
    return [];
  }
  if (!sameFile(check.id, record.netnsId)) {
    log.warn('the netns at this path is not the one the MACs were recorded in: not restoring them', { netns });
    return [];
  }
  let pod;
  try {
    pod = openPodRtnl(ctx.libc, at);
  } catch (err) {
    log.warn('cannot enter pod netns to restore MACs', { netns, error: err });
    return [];
  }
  const restored: string[] = [];
  try {
    // The path could have been replaced between the check and the open: check again before writing.
    const now = checkNetnsPath(ctx.libc, at);
    if (now.kind !== 'ok' || !sameFile(now.id, record.netnsId)) {
      log.warn('the netns at this path changed while DEL entered it: not restoring MACs', { netns });
      return [];
    }
    for (const { name, mac } of record.originalMacs) {
      try {
        const link = pod.linkByName(name);
        if (!link) continue;
        pod.setMac(link.index, parseMac(mac));
        restored.push(name);
        log.info('restored original MAC', { interface: name, mac });
      } catch (err) {
        log.warn('could not restore MAC', { interface: name, mac, error: err });
      }
    }
  } finally {
    pod.close();
  }
  return restored;
}
