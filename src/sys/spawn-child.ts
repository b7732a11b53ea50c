// Starts a process to outlive this one with node:child_process: the shim's way, which loads no
// FFI. Loaded only when a shim starts the announcer (node:child_process costs a run milliseconds).
import { spawn } from 'node:child_process';

/**
 * Starts `command` detached (own session, stdio on /dev/null, cwd `/`, `env` alone) and forgets it; a failure to exec
 * is ignored.
 */
export function spawnChild(command: readonly string[], env: Readonly<Record<string, string>>): void {
  const [file, ...args] = command;
  if (file === undefined) throw new Error('spawnChild: empty command');
  const child = spawn(file, args, { detached: true, stdio: 'ignore', cwd: '/', env });
  // An exec failure comes as an event: unheard, it would throw. The shim then finds no announcer listening and answers
  // as src/shim/unavailable.ts says (ADD: code 11, unless onUnavailable is skip); it never runs the command itself.
  child.on('error', () => undefined);
  child.unref();
}
