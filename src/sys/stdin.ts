// Reads the plugin's stdin within a byte limit: a runtime (or anything posing as one) can pipe
// gigabytes, and reading them whole would exhaust memory, or V8's string limit, before any check.
import { readSync } from 'node:fs';

const CHUNK_BYTES = 64 * 1024;

/** Reads fd 0 to EOF but at most maxBytes + 1 bytes (more than maxBytes: over the limit), through process.stdin when non-blocking (EAGAIN). */
export async function readStdinBounded(maxBytes: number): Promise<Uint8Array> {
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
    const b = chunk as Buffer;
    const take = b.subarray(0, limit - total);
    chunks.push(take);
    total += take.length;
    if (total >= limit) break; // leaving the loop destroys the stream: nothing more is read
  }
  return Buffer.concat(chunks, total);
}
