import { existsSync } from 'node:fs';
import { announceOnAdd } from '../announce/announce-on-add';
import { inView, netnsSockets } from '../announce/session';
import { recordPath } from '../announce/state';
import type { AddRequest } from '../cni/dispatch';
import { podOf } from '../cni/env';
import { formatResult } from '../cni/result';
import { isLocallyAdministeredMac } from '../wire/ethernet';
import type { CommandDeps } from './deps';
import { requirePodNetns, toCniError } from './errors';
import { planFor } from './plan-for';
import type { AnnouncePlan } from '../plan';
import type { RoutedGateway } from '../announce/gateway-verdict';

/**
 * The routed gateways the plan's interfaces ask, one entry per (interface, gateway): those of a family the interface
 * announces addresses of (`ipv4: false` asks no IPv4 gateway).
 */
function routedGateways(plan: AnnouncePlan): RoutedGateway[] {
  return plan.interfaces.flatMap((i) =>
    [...(i.ipv4.length > 0 ? i.gateways.ipv4 : []), ...(i.ipv6.length > 0 ? i.gateways.ipv6 : [])].map((gateway) => ({
      interface: i.name,
      gateway,
    })),
  );
}

/** ADD: announce the pod's addresses (and set IP-derived MACs), then print prevResult back. */
export async function add(deps: CommandDeps, req: AddRequest): Promise<Record<string, unknown>> {
  const { config, options, env, prevResult } = req;
  const libc = deps.libc();
  // Before anything else, the log included: CNI_NETNS must be a network namespace.
  const netnsId = requirePodNetns(libc, env.netns, deps.view);
  const log = deps.logger(config, env);
  for (const note of req.notes) log[note.level](note.msg, note.fields);
  const plan = planFor(options, prevResult, env, netnsId, deps.view);
  // Every derived MAC starts with macPrefix.
  const derivedMac = plan.interfaces.find((i) => i.targetMac)?.targetMac;
  if (derivedMac && !isLocallyAdministeredMac(derivedMac)) {
    log.warn('macPrefix is not locally administered: derived MACs may collide with real NICs', {
      macPrefix: options.macPrefix,
    });
  }
  const sends =
    options.enabled && plan.schedule.length > 0 && plan.interfaces.some((i) => i.ipv4.length + i.ipv6.length > 0);
  // A repeated ADD with nothing to do still takes over what an earlier one recorded (its job ends).
  if (!sends && !derivedMac && !existsSync(recordPath(config.stateDir, env.containerId, env.ifname))) {
    log.info('nothing to do for this attachment', {
      enabled: options.enabled,
      interfaces: plan.interfaces.map((i) => i.name),
    });
    return formatResult(prevResult, req.cniVersion);
  }
  try {
    const budget = deps.frameBudget(config.stateDir, log);
    const macs = await announceOnAdd(
      { ...deps, libc, open: inView(netnsSockets(libc), deps.view), log, budget },
      {
        network: config.name,
        containerId: env.containerId,
        ifname: env.ifname,
        netns: env.netns,
        netnsId,
        caller: deps.view.caller,
        pod: podOf(env.args.raw),
        stateDir: config.stateDir,
        plan,
        announce: options.enabled,
        addWaitMs: options.addWaitMs,
        readyTimeoutMs: options.readyTimeoutMs,
        logFile: config.logFile,
        logLevel: config.logLevel,
        conflictCheck:
          options.conflictCheck === 'off'
            ? undefined
            : { action: options.conflictCheck, probeMs: options.probeMs, probes: options.probes },
        gatewayCheck: { mode: options.gatewayCheck, windowMs: options.gatewayCheckMs, gateways: routedGateways(plan) },
      },
    );
    return formatResult(prevResult, req.cniVersion, { macs });
  } catch (err) {
    log.error('ADD failed', { error: err });
    throw toCniError(err, 'ADD');
  }
}
