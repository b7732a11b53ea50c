// The process's stdin and stdout, and small /proc reads, with Bun's own file API: the shim's
// fast path then loads no node:fs, which costs a run more (see docs/performance.md). stdin is
// read as a file, as /proc/uptime is, not as a stream: one I/O path instead of two, and less
// memory for the shim. Its twin, src/sys/stdio.ts, serves Node and the unit tests.
import type { StdinReader } from './stdio';

/** The little of Bun's API this module uses (the project's types are Node's). */
interface BunGlobal {
  stdin: { slice(start: number, end: number): { bytes(): Promise<Uint8Array> } };
  stdout: unknown;
  stderr: unknown;
  file(path: string): { text(): Promise<string> };
  write(destination: unknown, data: string): Promise<number>;
}

const bun = (globalThis as unknown as { Bun: BunGlobal }).Bun;

/**
 * A reader of fd 0 through Bun's stdin file: a later read(limit) goes on from where the last
 * stopped. Bun's bounded read of a pipe may return more than asked (whole 64 KiB chunks): what a
 * read takes beyond its limit is held for the next.
 */
export function stdinReader(): StdinReader {
  let held: Uint8Array = new Uint8Array(0);
  return {
    async read(maxBytes) {
      const limit = maxBytes + 1;
      if (held.length < limit) {
        const more = await bun.stdin.slice(0, limit - held.length).bytes();
        const all = new Uint8Array(held.length + more.length);
        all.set(held);
        all.set(more, held.length);
        held = all;
      }
      const out = held.subarray(0, limit);
      held = held.subarray(out.length);
      return out;
    },
  };
}

/** Writes `text` to fd 1 (stdout) or 2, whole. */
export async function writeFd(fd: 1 | 2, text: string): Promise<void> {
  await bun.write(fd === 1 ? bun.stdout : bun.stderr, text);
}

/** A small file's text (e.g. /proc/uptime). */
export async function readText(path: string): Promise<string> {
  return bun.file(path).text();
}
