// The payload trailer of the built plugin file: a comment at its very end,
// `/*@cni-announcer-addons` then one `name sha256 base64` line per entry.
// A comment costs the JS parser almost nothing, unlike a string literal.

/** Starts the trailer comment. */
export const TRAILER_MARKER = '/*@cni-announcer-addons';

/** One trailer entry: its content hash and base64 data. */
export interface TrailerEntry {
  sha256: string;
  base64: string;
}

/** Finds entry `name` in the text of a built plugin file. */
export function trailerEntry(fileText: string, name: string): TrailerEntry {
  const at = fileText.lastIndexOf(TRAILER_MARKER);
  if (at < 0) throw new Error('this announcer file carries no payload (was it built with scripts/build.mjs?)');
  const line = fileText
    .slice(at)
    .split('\n')
    .find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`${name} missing from the announcer file`);
  const [, sha256 = '', base64 = ''] = line.split(' ');
  return { sha256, base64 };
}
