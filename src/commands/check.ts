import { InterfaceMissingError } from '../announce/errors';
import type { CommandContext } from '../announce/context';
import type { CheckRequest } from '../cni/dispatch';
import { CniError, ErrorCode } from '../cni/errors';
import { openPodRtnl } from '../sys/netns';
import type { Rtnl } from '../sys/rtnl';
import { formatMac } from '../wire/ethernet';
import { parseIP } from '../wire/ip';
import { planFor } from './add';
import { requirePodNetns, toCniError } from './errors';

/** CHECK: the pod interfaces exist with prevResult's addresses, and with the IP-derived MAC when configured. */
export async function check(ctx: CommandContext, req: CheckRequest): Promise<void> {
  const { options, env, prevResult } = req;
  const netnsId = requirePodNetns(ctx.libc, env.netns, ctx.view);
  const plan = planFor(options, prevResult, env, netnsId, ctx.view);
  let pod: Rtnl | undefined;
  try {
    pod = openPodRtnl(ctx.libc, ctx.view.path(env.netns));
    for (const iface of plan.interfaces) {
      const link = pod.linkByName(iface.name);
      if (!link) throw new InterfaceMissingError([iface.name], env.netns);
      const present = pod.addresses(link.index);
      for (const address of iface.addresses) {
        const bytes = parseIP(address);
        if (!present.some((a) => bytes?.equals(a.bytes))) {
          throw new CniError(
            ErrorCode.AddressMissing,
            `address ${address} from prevResult is not on pod interface "${iface.name}"`,
          );
        }
      }
      if (iface.targetMac && !link.mac?.equals(iface.targetMac)) {
        throw new CniError(
          ErrorCode.MacMismatch,
          `pod interface "${iface.name}" has MAC ${link.mac ? formatMac(link.mac) : 'none'}, ` +
            `expected the IP-derived ${formatMac(iface.targetMac)}`,
        );
      }
    }
  } catch (err) {
    throw toCniError(err, 'CHECK');
  } finally {
    pod?.close();
  }
}
