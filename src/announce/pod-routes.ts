// Pure: the gateways a pod routes through, from its own routing table too. prevResult's
// routes are what the main plugin said; the kernel's table is what the pod really
// does, and a plugin may have added routes it did not report (a next hop per link).
import { canonicalIP, formatIPv6 } from '../wire/ip';
import type { RouteEntry } from '../wire/rtnetlink';
import type { AddGatewayCheck } from './first-round';

/** A planned pod interface as the check sees it: its index now, and the addresses it announces. */
export interface RoutedInterface {
  name: string;
  index: number;
  ipv4: readonly string[];
  ipv6: readonly string[];
}

/**
 * `check` with the next hops of the pod's `routes` on each interface added (a route's RTA_GATEWAY leaving through its
 * RTA_OIF), in a family the interface announces, each gateway once; unchanged when the check is off.
 */
export function withPodRoutes(
  check: AddGatewayCheck,
  routes: readonly RouteEntry[],
  interfaces: readonly RoutedInterface[],
): AddGatewayCheck {
  if (check.mode === 'off') return check;
  const gateways = [...check.gateways];
  for (const route of routes) {
    const iface = interfaces.find((i) => i.index === route.oif);
    if (!iface || !route.gateway) continue;
    const v4 = route.gateway.length === 4;
    if ((v4 ? iface.ipv4 : iface.ipv6).length === 0) continue;
    const gateway = v4 ? route.gateway.join('.') : formatIPv6(route.gateway);
    const known = gateways.some((g) => g.interface === iface.name && canonicalIP(g.gateway) === gateway);
    if (!known) gateways.push({ interface: iface.name, gateway });
  }
  return { ...check, gateways };
}
