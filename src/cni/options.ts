import type { CniArgs } from './env';
import type { PluginConfig } from './config';
import { optionKeys, type AttachmentOptionKey } from './option-schema';

/** The options in force for one attachment, after config, podOverrides, CNI_ARGS and the runtime's MAC are applied. */
export type AnnounceOptions = Pick<PluginConfig, AttachmentOptionKey> & { enabled: boolean };

const ATTACHMENT_OPTIONS = optionKeys('pod', 'attachment');

/** A log line about how an attachment's options came about, for the command to write. */
export type OptionNote = { level: 'warn' | 'info' | 'debug'; msg: string; fields: Record<string, unknown> };

/** A MAC the runtime (or the pod, through it) asked for, and where it came from. */
export type RuntimeMac = { mac: string; source: 'runtimeConfig.mac' | 'args.cni.mac' | 'CNI_ARGS MAC' };

/**
 * Computes one attachment's options. Precedence, by who may decide what:
 * 1. the conflist (the operator) sets every option;
 * 2. the pod, through `args.cni.announce` or its annotation `cni-announcer/announce`, changes only
 *    what podOverrides allows (see applyPodOverrides; combinePodAnnounces for both at once);
 * 3. announcing is off when CNI_ARGS `ANNOUNCE=false` or the pod's false/`{"enabled": false}`
 *    says so, and nothing turns it back on: `ANNOUNCE=true` and `enabled: true` only mean
 *    "not turned off", and never undo `count: 0` or `ipv4`/`ipv6: false` either;
 * 4. a MAC the runtime chose (runtimeConfig.mac, args.cni.mac, CNI_ARGS MAC=) turns `mac:
 *    ip-derived` into `keep`: it is never overwritten, and CHECK does not compare MACs.
 */
export function resolveOptions(config: PluginConfig, args: CniArgs): { options: AnnounceOptions; notes: OptionNote[] } {
  const notes: OptionNote[] = [];
  const note = (level: OptionNote['level'], msg: string, fields: Record<string, unknown>) =>
    notes.push({ level, msg, fields });
  const options = { enabled: true } as AnnounceOptions;
  for (const key of ATTACHMENT_OPTIONS) {
    const value = config[key];
    if (value !== undefined) Object.assign(options, { [key]: Array.isArray(value) ? [...value] : value });
  }

  const { enabled: podEnabled, ...podFields } = config.podAnnounce?.overrides ?? {};
  Object.assign(options, podFields);
  for (const { field, value, reason } of config.podAnnounce?.ignored ?? []) {
    note('warn', 'ignoring a pod override', { field, value, reason });
  }
  if (Object.keys(podFields).length > 0) {
    const { enabled: _enabledBy, ...from } = config.podAnnounce?.from ?? {};
    note('info', 'pod overrides applied', { overrides: podFields, from });
  }

  /** Who asks to turn announcing on (true) or off (false): CNI_ARGS ANNOUNCE, the pod's channels. */
  const askedBy = (on: boolean) => [
    ...(args.announce === on ? [`CNI_ARGS ANNOUNCE=${on}`] : []),
    ...(podEnabled === on ? [config.podAnnounce?.from.enabled ?? ''] : []),
  ];
  const [offBy, onBy] = [askedBy(false), askedBy(true)];
  if (offBy.length > 0) {
    options.enabled = false;
    note('info', 'announcing turned off for this attachment', { by: offBy.join(', ') });
    if (onBy.length > 0)
      note('warn', 'a request to announce does not turn announcing back on', { by: onBy.join(', ') });
  }

  const runtime = runtimeMac(config, args, notes);
  if (runtime !== undefined && options.mac === 'ip-derived') {
    options.mac = 'keep';
    note('info', 'the runtime chose the MAC: keeping it instead of the IP-derived one', { ...runtime });
  } else if (runtime !== undefined) {
    note('debug', 'the runtime chose the MAC', { ...runtime });
  }
  return { options, notes };
}

/**
 * The runtime's MAC, read as the tuning plugin does: runtimeConfig.mac, then args.cni.mac (a non-string one noted and
 * ignored), then CNI_ARGS MAC=.
 */
export function runtimeMac(config: PluginConfig, args: CniArgs, notes: OptionNote[] = []): RuntimeMac | undefined {
  const fromArgs = config.args?.cni?.mac;
  if (fromArgs !== undefined && typeof fromArgs !== 'string') {
    notes.push({ level: 'warn', msg: 'ignoring args.cni.mac: not a string', fields: { value: fromArgs } });
  }
  if (config.runtimeConfig?.mac) return { mac: config.runtimeConfig.mac, source: 'runtimeConfig.mac' };
  if (typeof fromArgs === 'string' && fromArgs !== '') return { mac: fromArgs, source: 'args.cni.mac' };
  if (args.mac) return { mac: args.mac, source: 'CNI_ARGS MAC' };
  return undefined;
}
