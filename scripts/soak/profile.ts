// How each pod of the load is made and driven: drawn from its worker's seeded stream, so that a seed replays the same
// pods. Pods announce with `arpOp: request` (one GARP per IPv4 address and round), some derive their MAC from their IP,
// some are deferred (their port held while ADD waits), some route through the gateway (the gateway check asks it).
import type { Profile } from './model';
import type { Rng } from './rng';

/** readyTimeoutMs of a deferred pod: far past addWaitMs, so the announcer waits on after ADD returned. */
const DEFERRED_READY_TIMEOUT_MS = 20_000;

/** One pod's profile. */
export function drawProfile(rng: Rng): Profile {
  const deferred = rng.chance(0.3);
  const roll = rng.next();
  const announce = roll < 0.08 ? 'count0' : roll < 0.16 ? 'optout' : 'yes';
  const profile: Profile = {
    ipDerived: rng.chance(0.35),
    ipv6: rng.chance(0.5),
    routed: rng.chance(0.75),
    deferred,
    announce,
    count: rng.int(2, 4),
    intervalMs: rng.int(4, 20) * 50,
    addWaitMs: deferred ? rng.int(3, 15) * 100 : 2000,
    releaseAfterMs: deferred ? rng.int(2, 30) * 100 : 0,
    checkPausesMs: Array.from({ length: rng.int(0, 2) }, () => rng.int(0, 8) * 100),
    holdMs: rng.int(0, 40) * 100,
  };
  if (deferred) profile.readyTimeoutMs = DEFERRED_READY_TIMEOUT_MS;
  return profile;
}

/** Whether the pod announces at all (not `count: 0`, not opted out). */
export function announces(p: Profile): boolean {
  return p.announce === 'yes';
}

/** The rounds an ADD plans for the pod. */
export function plannedRounds(p: Profile): number {
  return announces(p) ? p.count : 0;
}

/** The announcer's options of the pod's conflist entry (stateDir and logFile are added by the call). */
export function announcerOptions(p: Profile): Record<string, unknown> {
  const options: Record<string, unknown> = {
    arpOp: 'request',
    count: p.announce === 'count0' ? 0 : p.count,
    intervalMs: p.intervalMs,
    addWaitMs: p.addWaitMs,
    gatewayCheck: 'report',
    logLevel: 'info',
  };
  if (p.readyTimeoutMs !== undefined) options.readyTimeoutMs = p.readyTimeoutMs;
  if (p.ipDerived) options.mac = 'ip-derived';
  if (p.announce === 'optout') options.args = { cni: { announce: false } };
  return options;
}

/** One line naming what the profile does, for reports. */
export function describeProfile(p: Profile): string {
  const parts = [
    p.announce === 'yes' ? `count ${p.count} every ${p.intervalMs} ms` : p.announce,
    p.ipDerived ? 'ip-derived MAC' : 'own MAC',
    p.ipv6 ? 'dual-stack' : 'IPv4',
    p.routed ? 'routed via the gateway' : 'no route',
  ];
  if (p.deferred) parts.push(`deferred (addWaitMs ${p.addWaitMs}, released ${p.releaseAfterMs} ms after ADD)`);
  return parts.join(', ');
}
