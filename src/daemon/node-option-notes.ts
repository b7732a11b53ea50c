// Node options (idleExitMs, metricsFile, rateLimit) found in conflists: accepted, never
// applied (the announcer's node settings are its flags over announcer.conf), and said once.
// One WARN per network that carries any, on that network's log (its logFile, and stdout under
// the DaemonSet), naming them and where to set them instead; and one WARN on the announcer's own
// log per pair of networks of this stateDir that carry different values, naming both.
import { whereToSet, type NodeSettings } from '../cni/node-settings';
import type { NodeOptionKey } from '../cni/option-schema';
import type { Logger } from '../log';

/** A network as its config names it, with the node options its conflist carries. */
export interface ConflistNodeOptions {
  name: string;
  nodeOptions?: Partial<Record<NodeOptionKey, unknown>> | undefined;
}

/** What the announcer has said about conflists' node options. */
export class NodeOptionNotes {
  /** Each network that carried node options, with them, as first seen. */
  private readonly networks = new Map<string, Partial<Record<NodeOptionKey, unknown>>>();

  /** `log`: the announcer's own log; `settings`: the node settings in force. */
  constructor(
    private readonly log: Pick<Logger, 'warn'>,
    private readonly settings: NodeSettings,
  ) {}

  /** Notes a command's config; its network's first with node options logs a WARN on `networkLog`. */
  note(config: ConflistNodeOptions, networkLog: Pick<Logger, 'warn'>): void {
    const found = config.nodeOptions;
    if (found === undefined || this.networks.has(config.name)) return;
    const keys = Object.keys(found) as NodeOptionKey[];
    const fields = {
      network: config.name,
      options: found,
      inForce: Object.fromEntries(keys.map((k) => [k, this.settings[k] ?? null])),
      setInstead: keys.map(whereToSet),
    };
    const msg = "node options in this network's conflist are ignored: the node settings apply";
    networkLog.warn(msg, fields);
    for (const [other, theirs] of this.networks) {
      const differ = keys.filter((k) => k in theirs && JSON.stringify(theirs[k]) !== JSON.stringify(found[k]));
      if (differ.length === 0) continue;
      this.log.warn('two networks of this stateDir set node options differently: both are ignored', {
        networks: [other, config.name],
        options: Object.fromEntries(differ.map((k) => [k, { [other]: theirs[k], [config.name]: found[k] }])),
        inForce: Object.fromEntries(differ.map((k) => [k, this.settings[k] ?? null])),
      });
    }
    this.networks.set(config.name, found);
  }
}
