import type { CniPlugin } from './cni/dispatch';
import type { CommandDeps } from './commands/deps';

/**
 * The announcer as a CniPlugin, with its process dependencies injected. Each command's module is
 * loaded the first time the announcer runs that command: a start loads only what its commands need.
 */
export function announcerPlugin(deps: CommandDeps): CniPlugin {
  return {
    add: async (req) => (await import('./commands/add')).add(deps, req),
    del: async (req) => (await import('./commands/del')).del(deps, req),
    check: async (req) => (await import('./commands/check')).check(deps, req),
    status: async (req) => (await import('./commands/status')).status(deps, req),
    gc: async (req) => (await import('./commands/gc')).gc(deps, req),
  };
}
