import type { PluginConfig } from '../cni/config';
import type { Logger } from '../log';
import type { CallerView } from '../sys/caller-view';
import type { Libc } from '../sys/libc';
import type { AddDeps } from '../announce/announce-on-add';
import type { FrameBudget } from '../announce/frame-budget';

/**
 * What the commands need from the process, injected by the announcer (src/daemon/cni-host.ts) and by tests; the fields
 * ADD's announcement takes as they are.
 */
export interface CommandDeps
  extends Pick<AddDeps, 'timers' | 'waits' | 'host' | 'release' | 'lockFile' | 'written' | 'gate'> {
  /** The view of the file system of the process that sent the command: every path it carries resolves there. */
  view: CallerView;
  /** libc through koffi, loaded on first use. */
  libc(): Libc;
  /** A logger for one attachment (or for the network, when ids are absent); `args` (CNI_ARGS) may name its pod. */
  logger(
    config: PluginConfig,
    ids: { containerId?: string | undefined; ifname?: string | undefined; args?: { raw: Record<string, string> } },
  ): Logger;
  /** The node-wide frame budget of `stateDir`, at the node settings' rateLimit (unlimited without one). */
  frameBudget(stateDir: string, log: Logger): FrameBudget;
}
