/** Longest Linux interface name in bytes (IFNAMSIZ - 1). */
export const MAX_IFNAME_BYTES = 15;

/** What is wrong with a Linux interface name, as libcni checks it, or undefined when it is valid. */
export function ifnameProblem(name: string): string | undefined {
  if (name === '') return 'must not be empty';
  if (new TextEncoder().encode(name).length > MAX_IFNAME_BYTES) {
    return `must be at most ${MAX_IFNAME_BYTES} bytes long`;
  }
  if (name === '.' || name === '..') return 'must not be "." or ".."';
  if (/[/:\s]/u.test(name)) return 'must not contain "/", ":" or whitespace';
  return undefined;
}
