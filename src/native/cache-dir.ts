import { chmodSync, lstatSync, renameSync, writeFileSync } from 'node:fs';
import { ensureDir } from '../sys/ensure-dir';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SYSTEM_CACHE = '/run/cni-announcer/lib';

/**
 * The directory for extracted addons and the V8 code cache: /run/cni-announcer/lib
 * for root, else a per-uid directory in tmpdir. It must be ours and private,
 * since what is in it gets dlopen()ed or run.
 */
export function privateCacheDir(): string {
  const uid = process.getuid?.() ?? -1;
  const candidates = uid === 0 ? [SYSTEM_CACHE] : [];
  candidates.push(join(tmpdir(), `cni-announcer-${uid}`));
  let lastError: unknown;
  for (const dir of candidates) {
    try {
      ensureDir(dir, 0o700);
      const st = lstatSync(dir);
      if (!st.isDirectory() || st.uid !== uid) throw new Error(`${dir} is not a directory owned by uid ${uid}`);
      if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
      return dir;
    } catch (err) {
      lastError = err;
    }
  }
  throw new Error('no usable private cache directory', { cause: lastError });
}

/** Writes `data` to `file` atomically (temporary file + rename). */
export function writeAtomically(file: string, data: Uint8Array, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, data, { mode });
  renameSync(tmp, file);
}
