import type { CniPlugin } from './cni/dispatch';
import { add } from './commands/add';
import { check } from './commands/check';
import { del } from './commands/del';
import type { CommandDeps } from './commands/deps';
import { gc } from './commands/gc';
import { status } from './commands/status';

/** The announcer as a CniPlugin, with its process dependencies injected. */
export function announcerPlugin(deps: CommandDeps): CniPlugin {
  return {
    add: (req) => add(deps, req),
    del: (req) => del(deps, req),
    check: (req) => check(deps, req),
    status: (req) => status(deps, req),
    gc: (req) => gc(deps, req),
  };
}
