// ADD's IP-derived MACs: each planned interface with a target MAC gets it,
// its original MAC recorded first (by the caller) so that DEL (or a failing ADD) can put it back.
import type { Logger } from '../log';
import type { InterfacePlan } from '../plan';
import { formatMac } from '../wire/ethernet';
import type { PodSession } from './session';
import type { AttachmentRecord } from './state';

/**
 * Sets the target MACs of `interfaces` in the pod; `before` runs right before each change, with the interface's MAC
 * when `record` holds no original for it yet (record it first: a DEL after a crash mid-way can still restore it).
 * Returns the MACs by prevResult index.
 */
export function applyTargetMacs(
  session: PodSession,
  interfaces: readonly InterfacePlan[],
  record: AttachmentRecord,
  log: Logger,
  before: (original: { name: string; mac: string } | undefined) => void,
): Map<number, string> {
  const macs = new Map<number, string>();
  for (const plan of interfaces) {
    if (!plan.targetMac) continue;
    const iface = session.interfaces.find((i) => i.name === plan.name)!;
    if (iface.kind === 'ipvlan') {
      log.warn('ipvlan shares its parent MAC: not setting the IP-derived MAC', { interface: plan.name });
      continue;
    }
    const link = session.pod.rtnl.linkByIndex(iface.index);
    if (link?.mac?.length !== 6) {
      log.warn('interface has no Ethernet address: not setting the IP-derived MAC', { interface: plan.name });
      continue;
    }
    const target = formatMac(plan.targetMac);
    if (!link.mac.equals(plan.targetMac)) {
      const recorded = record.originalMacs.some((m) => m.name === plan.name);
      before(recorded ? undefined : { name: plan.name, mac: formatMac(link.mac) });
      session.pod.rtnl.setMac(iface.index, plan.targetMac);
      log.info('set IP-derived MAC', { interface: plan.name, from: formatMac(link.mac), to: target });
    }
    if (plan.resultIndex !== undefined) macs.set(plan.resultIndex, target);
  }
  return macs;
}
