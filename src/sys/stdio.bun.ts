// The process's stdin and stdout, and small /proc reads, with Bun's own file API: the shim's
// fast path then loads no node:fs (measured in a binary built as the plugin is: node:fs costs a
// run 1.6 ms and 5.6 MiB, Bun.stdin and Bun.write 0.6 ms and 2.9 MiB). Its twin, src/sys/stdio.ts,
// serves Node and the unit tests.
import type { StdinReader } from './stdio';

/** The little of Bun's API this module uses (the project's types are Node's). */
interface BunGlobal {
  stdin: { stream(): ReadableStream<Uint8Array> };
  stdout: unknown;
  file(path: string): { text(): Promise<string> };
  write(destination: unknown, data: string): Promise<number>;
}

const bun = (): BunGlobal => (globalThis as unknown as { Bun: BunGlobal }).Bun;

/**
 * A reader of fd 0 through one stream for the whole run: a later read(limit) goes on from where
 * the last stopped, with the bytes the stream had already taken from fd 0 (none is lost to a
 * second reader).
 */
export function stdinReader(): StdinReader {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let held: Uint8Array = new Uint8Array(0);
  let ended = false;
  return {
    async read(maxBytes) {
      const limit = maxBytes + 1;
      const chunks: Uint8Array[] = [];
      let total = 0;
      for (;;) {
        if (held.length > 0) {
          const take = held.subarray(0, limit - total);
          held = held.subarray(take.length);
          chunks.push(take);
          total += take.length;
        }
        if (total >= limit || ended) break;
        reader ??= bun().stdin.stream().getReader();
        const next = await reader.read();
        if (next.done) ended = true;
        else held = next.value;
      }
      const out = new Uint8Array(total);
      let at = 0;
      for (const c of chunks) {
        out.set(c, at);
        at += c.length;
      }
      return out;
    },
  };
}

/** Writes `text` to fd 1 (stdout) or 2, whole. */
export async function writeFd(fd: 1 | 2, text: string): Promise<void> {
  await bun().write(fd === 1 ? bun().stdout : (bun() as unknown as { stderr: unknown }).stderr, text);
}

/** A small file's text (e.g. /proc/uptime). */
export async function readText(path: string): Promise<string> {
  return bun().file(path).text();
}
