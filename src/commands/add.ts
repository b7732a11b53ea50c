import { announceOnAdd } from '../announce/add';
import type { CommandContext } from '../announce/context';
import type { RoutedGateway } from '../announce/gateway-verdict';
import { readRecordFile, recordPath } from '../announce/state';
import type { AddRequest } from '../cni/dispatch';
import { podOf } from '../cni/env';
import type { AnnounceOptions } from '../cni/options';
import { formatResult, type PrevResult } from '../cni/result';
import { planAnnouncement, type AnnouncePlan } from '../plan';
import type { CallerView } from '../sys/caller-view';
import { fileIdAt, sameFile, type FileId } from '../sys/file-id';
import { isLocallyAdministeredMac } from '../wire/ethernet';
import { requirePodNetns, toCniError } from './errors';

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
export async function add(ctx: CommandContext, req: AddRequest): Promise<Record<string, unknown>> {
  const { config, options, env, prevResult } = req;
  // Before anything else, the log included: CNI_NETNS must be a network namespace.
  const netnsId = requirePodNetns(ctx.libc, env.netns, ctx.view);
  const log = ctx.logger(config, env);
  for (const note of req.notes) log[note.level](note.msg, note.fields);
  const plan = planFor(options, prevResult, env, netnsId, ctx.view);
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
  if (
    !sends &&
    !derivedMac &&
    readRecordFile(recordPath(config.stateDir, env.containerId, env.ifname)).kind === 'none'
  ) {
    log.info('nothing to do for this attachment', {
      enabled: options.enabled,
      interfaces: plan.interfaces.map((i) => i.name),
    });
    return formatResult(prevResult, req.cniVersion);
  }
  try {
    const macs = await announceOnAdd(
      { ...ctx, log },
      {
        network: config.name,
        containerId: env.containerId,
        ifname: env.ifname,
        netns: env.netns,
        netnsId,
        caller: ctx.view.caller,
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

/**
 * Plans an attachment; a prevResult `sandbox` spelled unlike CNI_NETNS (a symlink, /proc/PID/ns/net) still names the
 * pod when it is the same netns file (each path as the caller, `view`, sees it).
 */
export function planFor(
  options: AnnounceOptions,
  prevResult: PrevResult,
  env: { netns: string; ifname: string },
  netnsId: FileId,
  view: CallerView,
): AnnouncePlan {
  const interfaces = prevResult.interfaces.map((i) => {
    if (!i.sandbox || i.sandbox === env.netns) return i;
    return sameFile(fileIdAt(view.path(i.sandbox)), netnsId) ? { ...i, sandbox: env.netns } : i;
  });
  return planAnnouncement(options, { interfaces, ips: prevResult.ips, routes: prevResult.routes }, env);
}
