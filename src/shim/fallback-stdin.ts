// The stdin a fallback command reads: the bytes the shim already took from fd 0, then (when the
// shim stopped at its own limit) the rest of fd 0, with the stdin reader's limit semantics.
import { MAX_FORWARDED_STDIN } from './wire';

/** A readStdin(maxBytes) that yields `taken` first: at most maxBytes + 1 bytes in all, as the stdin reader gives. */
export function resumedStdin(
  taken: Uint8Array,
  readMore: (maxBytes: number) => Promise<Uint8Array>,
): (maxBytes: number) => Promise<Uint8Array> {
  return async (maxBytes) => {
    // The shim read to EOF, or already holds more than the limit.
    if (taken.length <= MAX_FORWARDED_STDIN || taken.length > maxBytes) return taken.subarray(0, maxBytes + 1);
    const more = await readMore(maxBytes - taken.length);
    const all = new Uint8Array(taken.length + more.length);
    all.set(taken);
    all.set(more, taken.length);
    return all;
  };
}
