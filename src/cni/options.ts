import type { CniArgs } from './cni-args';
import type { AnnounceOverrides, PluginConfig } from './config';

/** The config fields that can differ per attachment. */
type AttachmentFields = 'ipv4' | 'ipv6' | 'arpOp' | 'interfaces' | 'mac' | 'macPrefix' | 'count' | 'intervalMs' | 'backoff' | 'addWaitMs' | 'readyTimeoutMs';

/** The options in force for one attachment, after config, CNI_ARGS and args.cni are applied. */
export type AnnounceOptions = Pick<PluginConfig, AttachmentFields> & { enabled: boolean };

/**
 * Computes one attachment's options with precedence config < CNI_ARGS < `args.cni.announce`.
 * ANNOUNCE=false|true sets `enabled`; `args.cni.announce` false/true sets `enabled`, and an object
 * overrides only the fields it names (`enabled` included): a pod's tuning never re-enables an opted-out pod.
 */
export function resolveOptions(config: PluginConfig, args: CniArgs): AnnounceOptions {
  const options: AnnounceOptions = {
    enabled: true,
    ipv4: config.ipv4,
    ipv6: config.ipv6,
    arpOp: config.arpOp,
    mac: config.mac,
    macPrefix: config.macPrefix,
    count: config.count,
    intervalMs: config.intervalMs,
    backoff: config.backoff,
    addWaitMs: config.addWaitMs,
    readyTimeoutMs: config.readyTimeoutMs,
  };
  if (config.interfaces !== undefined) options.interfaces = [...config.interfaces];
  if (args.announce !== undefined) options.enabled = args.announce;
  const announce = config.args?.cni?.announce;
  if (typeof announce === 'boolean') options.enabled = announce;
  else if (announce !== undefined) applyOverrides(options, announce);
  return options;
}

function applyOverrides(options: AnnounceOptions, o: AnnounceOverrides): void {
  if (o.enabled !== undefined) options.enabled = o.enabled;
  if (o.ipv4 !== undefined) options.ipv4 = o.ipv4;
  if (o.ipv6 !== undefined) options.ipv6 = o.ipv6;
  if (o.arpOp !== undefined) options.arpOp = o.arpOp;
  if (o.mac !== undefined) options.mac = o.mac;
  if (o.macPrefix !== undefined) options.macPrefix = o.macPrefix;
  if (o.count !== undefined) options.count = o.count;
  if (o.intervalMs !== undefined) options.intervalMs = o.intervalMs;
  if (o.backoff !== undefined) options.backoff = o.backoff;
}
