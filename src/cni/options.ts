import type { CniArgs } from './env';
import type { PluginConfig } from './config';
import { optionKeys, type AttachmentOptionKey } from './option-schema';

/** The options in force for one attachment, after config, podOverrides, CNI_ARGS and the runtime's MAC are applied. */
export type AnnounceOptions = Pick<PluginConfig, AttachmentOptionKey> & { enabled: boolean };

const ATTACHMENT_OPTIONS = optionKeys('pod', 'attachment');

/** A log line about how an attachment's options came about, for the command to write. */
export interface OptionNote {
  level: 'warn' | 'info' | 'debug';
  msg: string;
  fields: Record<string, unknown>;
}

/** A MAC the runtime (or the pod, through it) asked for, and where it came from. */
export interface RuntimeMac {
  mac: string;
  source: 'runtimeConfig.mac' | 'args.cni.mac' | 'CNI_ARGS MAC';
}

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
  const options = { enabled: true } as AnnounceOptions;
  for (const key of ATTACHMENT_OPTIONS) {
    const value = config[key];
    if (value !== undefined) Object.assign(options, { [key]: Array.isArray(value) ? [...value] : value });
  }

  const { enabled: podEnabled, ...podFields } = config.podAnnounce?.overrides ?? {};
  const podBy = config.podAnnounce?.from.enabled ?? '';
  for (const [key, value] of Object.entries(podFields)) {
    if (value !== undefined) Object.assign(options, { [key]: value });
  }
  for (const { field, value, reason } of config.podAnnounce?.ignored ?? []) {
    notes.push({ level: 'warn', msg: 'ignoring a pod override', fields: { field, value, reason } });
  }
  if (Object.keys(podFields).length > 0) {
    const { enabled: _enabledBy, ...from } = config.podAnnounce?.from ?? {};
    notes.push({ level: 'info', msg: 'pod overrides applied', fields: { overrides: podFields, from } });
  }

  const offBy = [
    ...(args.announce === false ? ['CNI_ARGS ANNOUNCE=false'] : []),
    ...(podEnabled === false ? [podBy] : []),
  ];
  if (offBy.length > 0) {
    options.enabled = false;
    notes.push({ level: 'info', msg: 'announcing turned off for this attachment', fields: { by: offBy.join(', ') } });
    const onBy = [
      ...(args.announce === true ? ['CNI_ARGS ANNOUNCE=true'] : []),
      ...(podEnabled === true ? [podBy] : []),
    ];
    if (onBy.length > 0) {
      notes.push({
        level: 'warn',
        msg: 'a request to announce does not turn announcing back on',
        fields: { by: onBy.join(', ') },
      });
    }
  }

  const runtime = runtimeMac(config, args, notes);
  if (runtime !== undefined) {
    if (options.mac === 'ip-derived') {
      options.mac = 'keep';
      notes.push({
        level: 'info',
        msg: 'the runtime chose the MAC: keeping it instead of the IP-derived one',
        fields: { ...runtime },
      });
    } else {
      notes.push({ level: 'debug', msg: 'the runtime chose the MAC', fields: { ...runtime } });
    }
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
