// koffi's addon from the file the compiled binary embeds (src/native/embedded-koffi.ts wires it).
import { readFileSync } from 'node:fs';
import { loadAddon } from './load-addon';

/** koffi's API as its addon exports it: what loadKoffi() hands out. */
export interface KoffiAddon {
  version: string;
}

/**
 * Reads koffi's addon whole from `file` and loads it from an anonymous file (src/native/load-addon.ts);
 * throws, as koffi's own entry does and with its words, when its version is not `version`.
 */
export function loadKoffiAddon(
  file: string,
  version: string,
  load: (name: string, content: Uint8Array) => unknown = loadAddon,
  read: (file: string) => Uint8Array = readFileSync,
): KoffiAddon {
  const addon = load('koffi', read(file)) as KoffiAddon;
  if (addon.version !== version) throw new Error('Mismatched native Koffi modules');
  return addon;
}
