// Whether a pod interface may be announced now, and what is really on it.
import type { Rtnl } from '../sys/rtnl';
import { PortState } from '../wire/rtnetlink';
import { parseIPv4, parseIPv6 } from '../wire/ip';
import type { ResolvedInterface } from './pod-interface';

/** The addresses to announce on one interface, canonical text as in prevResult. */
export interface AnnounceTarget {
  name: string;
  ipv4: readonly string[];
  ipv6: readonly string[];
}

/** What one round sends for an interface: its current MAC and the addresses really on it. */
export interface RoundInput {
  index: number;
  name: string;
  mac: Buffer;
  noarp: boolean;
  ipv4: Buffer[];
  ipv6: { bytes: Buffer; optimistic: boolean }[];
  /** Planned addresses left out, and why (absent, DAD failed). */
  skipped: string[];
}

/** The readiness of one interface at one moment. */
export type Snapshot =
  | { state: 'ready'; input: RoundInput }
  | { state: 'waiting'; reasons: string[] }
  | { state: 'gone' };

const PORT_STATE_NAMES = ['disabled', 'listening', 'learning', 'forwarding', 'blocking'];

/**
 * Whether the interface may be announced: link up with carrier, bridge port forwarding, no planned IPv6 address
 * tentative (absent or DAD-failed ones never are).
 */
export function snapshot(pod: Rtnl, host: Rtnl, iface: ResolvedInterface, target: AnnounceTarget): Snapshot {
  const link = pod.linkByIndex(iface.index);
  if (!link || link.name !== iface.name) return { state: 'gone' };
  const reasons: string[] = [];
  if (!link.up) reasons.push(`${iface.name} is down`);
  else if (!link.running) reasons.push(`${iface.name} has no carrier`);
  if (iface.hostPeer) {
    const state = host.bridgePortState(iface.hostPeer.index);
    if (state !== undefined && state !== PortState.Forwarding) {
      reasons.push(`bridge port ${iface.hostPeer.name} is ${PORT_STATE_NAMES[state] ?? `in state ${state}`}`);
    }
  }
  const present = pod.addresses(iface.index);
  const skipped: string[] = [];
  const ipv4: Buffer[] = [];
  for (const text of target.ipv4) {
    const bytes = parseIPv4(text);
    if (present.some((a) => a.bytes.equals(bytes))) ipv4.push(bytes);
    else skipped.push(`${text} (not on ${iface.name})`);
  }
  const ipv6: RoundInput['ipv6'] = [];
  for (const text of target.ipv6) {
    const bytes = parseIPv6(text);
    const found = present.find((a) => a.bytes.equals(bytes));
    if (!found) skipped.push(`${text} (not on ${iface.name})`);
    else if (found.dadFailed) skipped.push(`${text} (duplicate address detection failed)`);
    else if (found.tentative) reasons.push(`${text} is tentative (DAD in progress)`);
    else ipv6.push({ bytes, optimistic: found.optimistic });
  }
  if (reasons.length > 0) return { state: 'waiting', reasons };
  if (link.mac?.length !== 6) return { state: 'waiting', reasons: [`${iface.name} has no Ethernet address`] };
  return {
    state: 'ready',
    input: { index: iface.index, name: iface.name, mac: link.mac, noarp: link.noarp, ipv4, ipv6, skipped },
  };
}
