import { listRecords, removeRecord } from '../announce/state';
import type { GcRequest } from '../cni/dispatch';
import type { CommandDeps } from './deps';
import { stopTail } from '../announce/stop-tail';

/** GC: stop tails and drop records of this network's attachments that the runtime no longer lists. */
export async function gc(deps: CommandDeps, req: GcRequest): Promise<void> {
  const { config } = req;
  const log = deps.logger(config, {});
  const live = new Set(req.validAttachments.map((a) => `${a.containerId}@${a.ifname}`));
  for (const { file, record } of listRecords(config.stateDir)) {
    if (record.network !== config.name || live.has(`${record.containerId}@${record.ifname}`)) continue;
    if (record.tail) await stopTail(record.tail, deps.timers).catch((err) => log.warn('could not stop tail', { error: err }));
    removeRecord(file);
    log.info('collected stale attachment', { containerId: record.containerId, ifname: record.ifname });
  }
}
