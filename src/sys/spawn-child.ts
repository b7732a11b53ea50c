// Starts a process to outlive this one with node:child_process: the Node twin of spawn-child.bun.ts
// (which the binary takes instead), for Node and the unit tests. Loads no FFI.
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { MAX_READY_LINE, READY_FD } from '../self-command';

/**
 * Starts `command` detached (own session, stdio on /dev/null, cwd `/`, `env` alone) with the write end of a pipe as
 * its fd READY_FD, and forgets it. Resolves with the first line that comes through that pipe, without its newline
 * ('' when the pipe ends first: the child exited); rejects with the error when it cannot be executed.
 */
export function spawnChild(command: readonly string[], env: Readonly<Record<string, string>>): Promise<string> {
  const [file, ...args] = command;
  if (file === undefined) throw new Error('spawnChild: empty command');
  const stdio = Array.from({ length: READY_FD + 1 }, (_, fd) => (fd === READY_FD ? 'pipe' : 'ignore'));
  const child = spawn(file, args, { detached: true, stdio, cwd: '/', env });
  child.unref();
  return new Promise((resolve, reject) => {
    // An exec failure comes as an event, before the pipe's end (unheard, it would throw): the shim says why it could
    // not start the announcer (src/shim/unavailable.ts); it never runs the command itself.
    child.on('error', reject);
    const ready = child.stdio[READY_FD] as Readable;
    let text = '';
    const heard = (): void => {
      ready.destroy();
      resolve(text.split('\n')[0]!);
    };
    ready.setEncoding('utf8');
    ready.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\n') || text.length >= MAX_READY_LINE) heard();
    });
    ready.once('close', heard);
  });
}
