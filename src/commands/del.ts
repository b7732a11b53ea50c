import { readRecord, recordPath, removeRecord, type AttachmentRecord } from '../announce/state';
import type { DelRequest } from '../cni/dispatch';
import type { Logger } from '../log';
import { checkNetnsPath, openPodRtnl } from '../sys/netns';
import { parseMac } from '../wire/mac';
import type { CommandDeps } from './deps';
import { stopTail } from '../announce/stop-tail';

/**
 * DEL: stop the attachment's tail, put back the MACs we replaced (host-device
 * NICs return to the node), forget the attachment. Best-effort and idempotent:
 * every step is attempted, failures are logged, DEL itself succeeds.
 */
export async function del(deps: CommandDeps, req: DelRequest): Promise<void> {
  const { config, env } = req;
  const log = deps.logger(config, env);
  if (req.prevResultError) log.warn('ignoring invalid prevResult on DEL', { error: req.prevResultError });
  const file = recordPath(config.stateDir, env.containerId, env.ifname);
  const record = readRecord(file);
  if (!record) return;
  if (record.tail) {
    try {
      await stopTail(record.tail, deps.timers);
    } catch (err) {
      log.warn('could not stop the background tail', { pid: record.tail.pid, error: err });
    }
  }
  const netns = env.netns ?? record.netns;
  if (record.originalMacs.length > 0) await restoreMacs(deps, record, netns, log);
  removeRecord(file);
}

async function restoreMacs(deps: CommandDeps, record: AttachmentRecord, netns: string, log: Logger): Promise<void> {
  if (checkNetnsPath(netns).kind !== 'ok') {
    log.info('pod netns gone: no MAC to restore', { netns });
    return;
  }
  let pod;
  try {
    pod = openPodRtnl(deps.libc(), netns);
  } catch (err) {
    log.warn('cannot enter pod netns to restore MACs', { netns, error: err });
    return;
  }
  try {
    for (const { name, mac } of record.originalMacs) {
      try {
        const link = pod.linkByName(name);
        if (!link) continue;
        pod.setMac(link.index, parseMac(mac));
        log.info('restored original MAC', { interface: name, mac });
      } catch (err) {
        log.warn('could not restore MAC', { interface: name, mac, error: err });
      }
    }
  } finally {
    pod.close();
  }
}
