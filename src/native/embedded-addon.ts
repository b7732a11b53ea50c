// Native addons (koffi, netlink) travel inside the bundle as base64 so that
// one copied file is a working plugin. On first use each is written to a
// root-only cache directory under its content hash and dlopen()ed from there.
import { chmodSync, existsSync, lstatSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SYSTEM_CACHE = '/run/cni-announcer/lib';

/** Loads the addon `name` whose bytes are `base64` (sha256 prefix `hash`), extracting it once. */
export function loadEmbeddedAddon(name: string, hash: string, base64: string): unknown {
  const dir = cacheDir();
  const file = join(dir, `${name}-${hash}.node`);
  if (!existsSync(file)) {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, Buffer.from(base64, 'base64'), { mode: 0o500 });
    renameSync(tmp, file); // atomic: concurrent plugins never load a half-written file
  }
  const module = { exports: {} as unknown };
  process.dlopen(module, file);
  return module.exports;
}

function cacheDir(): string {
  const uid = process.getuid?.() ?? -1;
  const candidates = uid === 0 ? [SYSTEM_CACHE] : [];
  candidates.push(join(tmpdir(), `cni-announcer-${uid}`));
  let lastError: unknown;
  for (const dir of candidates) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      chmodSync(dir, 0o700);
      const st = lstatSync(dir);
      // A directory someone else owns could hand us their code to dlopen.
      if (!st.isDirectory() || st.uid !== uid) throw new Error(`${dir} is not a directory owned by uid ${uid}`);
      return dir;
    } catch (err) {
      lastError = err;
    }
  }
  throw new Error('no usable cache directory for native addons', { cause: lastError });
}
