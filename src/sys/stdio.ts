// The process's stdin and stdout, and small /proc reads, with node:fs: the Node twin of
// stdio.bun.ts, which the compiled binary carries instead (scripts/build/plugin.ts): under Bun,
// node:fs costs a run more to load than Bun's own file API (see docs/performance.md).
import { readFileSync, readSync, writeSync } from 'node:fs';

const CHUNK_BYTES = 64 * 1024;

/** fd 0, read in steps: each read(limit) reads to EOF but at most limit + 1 more bytes (more than limit: over it). */
export interface StdinReader {
  read(limit: number): Promise<Uint8Array>;
}

/** A reader of fd 0 (process.stdin when fd 0 is non-blocking: EAGAIN). */
export function stdinReader(): StdinReader {
  return { read: readBounded };
}

async function readBounded(maxBytes: number): Promise<Uint8Array> {
  const limit = maxBytes + 1;
  const chunks: Buffer[] = [];
  let total = 0;
  while (total < limit) {
    const buf = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, limit - total));
    let n: number;
    try {
      n = readSync(0, buf, 0, buf.length, null);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      return readRestAsync(chunks, total, limit);
    }
    if (n === 0) break;
    chunks.push(buf.subarray(0, n));
    total += n;
  }
  return Buffer.concat(chunks, total);
}

async function readRestAsync(chunks: Buffer[], total: number, limit: number): Promise<Uint8Array> {
  for await (const chunk of process.stdin) {
    const take = (chunk as Buffer).subarray(0, limit - total);
    chunks.push(take);
    total += take.length;
    if (total >= limit) break; // leaving the loop destroys the stream: nothing more is read
  }
  return Buffer.concat(chunks, total);
}

/** Writes `text` to fd 1 (stdout) or 2 with write(2), whole: process.stdout would load node:net and streams. */
export async function writeFd(fd: 1 | 2, text: string): Promise<void> {
  const bytes = Buffer.from(text);
  for (let off = 0; off < bytes.length; ) {
    try {
      off += writeSync(fd, bytes, off);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err; // a non-blocking pipe: retry
    }
  }
}

/** A small file's text (e.g. /proc/uptime). */
export async function readText(path: string): Promise<string> {
  return readFileSync(path, 'latin1');
}
