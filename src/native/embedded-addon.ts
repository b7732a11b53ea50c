// Native addons (koffi, netlink) travel inside the bundle so that one copied
// file is a working plugin. They sit brotli-compressed in a comment at the end
// of the file (a comment costs the JS parser almost nothing, unlike a string
// literal), and are extracted once, on first use, to a root-only cache
// directory under their content hash, then dlopen()ed from there.
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Starts the trailer comment: then one `name sha256 base64(brotli(bytes))` line per addon. */
export const ADDON_TRAILER_MARKER = '/*@cni-announcer-addons';
const SYSTEM_CACHE = '/run/cni-announcer/lib';

/** Loads the addon `name` whose bytes hash to `sha256`, extracting it from `bundle` if not cached yet. */
export function loadEmbeddedAddon(name: string, sha256: string, bundle: string = __filename): unknown {
  const file = join(cacheDir(), `${name}-${sha256.slice(0, 16)}.node`);
  if (!existsSync(file)) {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, extractAddon(readFileSync(bundle, 'latin1'), name, sha256), { mode: 0o500 });
    renameSync(tmp, file); // atomic: concurrent plugins never load a half-written file
  }
  const module = { exports: {} as unknown };
  process.dlopen(module, file);
  return module.exports;
}

/** Finds addon `name` in a bundle's trailer and returns its bytes, checked against `sha256`. */
export function extractAddon(bundleText: string, name: string, sha256: string): Buffer {
  const at = bundleText.lastIndexOf(ADDON_TRAILER_MARKER);
  if (at < 0) throw new Error('this announcer file carries no native addons (was it built with scripts/build.mjs?)');
  const line = bundleText
    .slice(at)
    .split('\n')
    .find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`native addon ${name} missing from the bundle`);
  const [, hash, data] = line.split(' ');
  // Loaded only on extraction: node:crypto alone costs startup ~10 ms.
  const { brotliDecompressSync } = process.getBuiltinModule('node:zlib');
  const { createHash } = process.getBuiltinModule('node:crypto');
  const bytes = brotliDecompressSync(Buffer.from(data ?? '', 'base64'));
  const actual = createHash('sha256').update(bytes).digest('hex');
  if (hash !== sha256 || actual !== sha256) throw new Error(`native addon ${name} is corrupt (sha256 ${actual}, expected ${sha256})`);
  return bytes;
}

function cacheDir(): string {
  const uid = process.getuid?.() ?? -1;
  const candidates = uid === 0 ? [SYSTEM_CACHE] : [];
  candidates.push(join(tmpdir(), `cni-announcer-${uid}`));
  let lastError: unknown;
  for (const dir of candidates) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const st = lstatSync(dir);
      // A directory someone else owns could hand us their code to dlopen.
      if (!st.isDirectory() || st.uid !== uid) throw new Error(`${dir} is not a directory owned by uid ${uid}`);
      if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
      return dir;
    } catch (err) {
      lastError = err;
    }
  }
  throw new Error('no usable cache directory for native addons', { cause: lastError });
}
