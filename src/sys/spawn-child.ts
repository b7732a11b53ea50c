// Starts a process to outlive this one with node:child_process: the shim's way, which loads no
// FFI. Loaded only when a shim starts the announcer (node:child_process costs a run milliseconds).
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { READY_FD } from '../self-command';

/**
 * Starts `command` detached (own session, stdio on /dev/null, cwd `/`, `env` alone) with the write end of a pipe as
 * its fd READY_FD, and forgets it. Resolves when the first bytes or the end come through that pipe: the child said it
 * is ready, or it exited (a failure to exec included).
 */
export function spawnChild(command: readonly string[], env: Readonly<Record<string, string>>): Promise<void> {
  const [file, ...args] = command;
  if (file === undefined) throw new Error('spawnChild: empty command');
  const stdio = Array.from({ length: READY_FD + 1 }, (_, fd) => (fd === READY_FD ? 'pipe' : 'ignore'));
  const child = spawn(file, args, { detached: true, stdio, cwd: '/', env });
  // An exec failure comes as an event: unheard, it would throw. The pipe then ends; the shim's next connection finds
  // no announcer, and it answers as src/shim/unavailable.ts says (it never runs the command itself).
  child.on('error', () => undefined);
  child.unref();
  const ready = child.stdio[READY_FD] as Readable;
  return new Promise((resolve) => {
    const heard = (): void => {
      ready.destroy();
      resolve();
    };
    for (const event of ['data', 'end', 'close', 'error']) ready.once(event, heard);
  });
}
