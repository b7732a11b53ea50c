// Native addons (koffi, netlink) travel inside the built plugin file, brotli-
// compressed in its trailer (see trailer.ts), so that one copied file is a
// working plugin. Each is extracted once, on first use, to a private cache
// directory under its content hash, then dlopen()ed from there.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { privateCacheDir, writeAtomically } from './cache-dir';
import { trailerEntry } from './trailer';

/** Loads the addon `name` whose bytes hash to `sha256`, extracting it from `bundle` if not cached yet. */
export function loadEmbeddedAddon(name: string, sha256: string, bundle: string = __filename): unknown {
  const file = join(privateCacheDir(), `${name}-${sha256.slice(0, 16)}.node`);
  // Atomic: concurrent plugins never load a half-written file.
  if (!existsSync(file)) writeAtomically(file, extractAddon(readFileSync(bundle, 'latin1'), name, sha256), 0o500);
  const module = { exports: {} as unknown };
  process.dlopen(module, file);
  return module.exports;
}

/** Finds addon `name` in a built file's trailer and returns its bytes, checked against `sha256`. */
export function extractAddon(fileText: string, name: string, sha256: string): Buffer {
  const entry = trailerEntry(fileText, name);
  // Loaded only on extraction: node:crypto alone costs startup ~10 ms.
  const { brotliDecompressSync } = process.getBuiltinModule('node:zlib');
  const { createHash } = process.getBuiltinModule('node:crypto');
  const bytes = brotliDecompressSync(Buffer.from(entry.base64, 'base64'));
  const actual = createHash('sha256').update(bytes).digest('hex');
  if (entry.sha256 !== sha256 || actual !== sha256) {
    throw new Error(`native addon ${name} is corrupt (sha256 ${actual}, expected ${sha256})`);
  }
  return bytes;
}
