// Putting back the MACs ADD set, from inside ADD: when ADD fails for an address
// conflict (106), an unanswered gateway (107) or a caller that no longer waits
// (11), the pod keeps the MAC it came with.
import type { Logger } from '../log';
import { parseMac } from '../wire/ethernet';
import type { PodSession } from './session';
import type { AttachmentRecord } from './state';

/**
 * Restores each MAC `record` says was replaced; restored ones leave record.originalMacs, the others stay (logged) for
 * DEL to retry.
 */
export function restoreRecordedMacs(session: PodSession, record: AttachmentRecord, log: Logger): void {
  record.originalMacs = record.originalMacs.filter(({ name, mac }) => {
    const iface = session.interfaces.find((i) => i.name === name);
    if (!iface) return true;
    try {
      session.pod.rtnl.setMac(iface.index, parseMac(mac));
      log.info('restored the original MAC', { interface: name, mac });
      return false;
    } catch (err) {
      log.error('cannot restore the original MAC: DEL will try again', { interface: name, mac, error: err });
      return true;
    }
  });
}
