// Starts a process to outlive this one with Bun.spawn: the shim's way in the compiled binary, which
// loads no FFI, and not node:child_process either, whose loading alone costs a cold ADD more than
// the spawn (see docs/performance.md). Its twin, src/sys/spawn-child.ts, serves Node and the unit
// tests (scripts/build/plugin.ts takes this one in the binary).
import { closeSync } from 'node:fs';
import { MAX_READY_LINE, READY_FD, READY_LINES } from '../self-command';

/** The little of Bun's API this module uses (the project's types are Node's). */
interface BunSpawn {
  spawn(options: {
    cmd: readonly string[];
    detached: boolean;
    stdio: ('ignore' | 'pipe')[];
    cwd: string;
    env: Readonly<Record<string, string>>;
  }): { unref(): void; stdio: (number | null)[] };
  file(fd: number): { stream(): ReadableStream<Uint8Array> };
}

/**
 * Starts `command` detached (own session, stdio on /dev/null, cwd `/`, `env` alone) with one end of a stream as its fd
 * READY_FD (Bun's 'pipe' slot is a socketpair), and forgets it. Resolves with the first line that comes through that
 * stream, without its newline ('' when the stream ends first: the child exited); rejects with the error when it
 * cannot be executed.
 */
export async function spawnChild(command: readonly string[], env: Readonly<Record<string, string>>): Promise<string> {
  if (command[0] === undefined) throw new Error('spawnChild: empty command');
  const bun = (globalThis as unknown as { Bun: BunSpawn }).Bun;
  const slot = (fd: number): 'ignore' | 'pipe' => (fd === READY_FD ? 'pipe' : 'ignore');
  const stdio = Array.from({ length: READY_FD + 1 }, (_, fd) => slot(fd));
  // An executable that cannot be run throws here (ENOENT, EACCES): the shim says why (src/shim/unavailable.ts).
  const child = bun.spawn({ cmd: command, detached: true, stdio, cwd: '/', env });
  child.unref();
  // The parent's end of the stream: ours to close (Bun hands over the fds of extra stdio slots).
  const ready = child.stdio[READY_FD];
  // Bun gives every 'pipe' slot an fd; without one the shim would still find the announcer by trying its socket.
  if (typeof ready !== 'number') return READY_LINES.listening;
  const reader = bun.file(ready).stream().getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (!text.includes('\n') && text.length < MAX_READY_LINE) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    await reader.cancel().catch(() => undefined);
    closeSync(ready);
  }
  return text.split('\n')[0]!;
}
