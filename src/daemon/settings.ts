// The node settings of the announcer of a stateDir: its flags over the stateDir's
// announcer.conf over the defaults (src/cni/node-settings.ts). Read once, at start: no
// request, record or conflist changes them afterwards.
import { join } from '../path';
import { NODE_SETTINGS_FILE } from '../state-files';
import {
  NODE_SETTINGS_MAX_BYTES,
  parseNodeSettings,
  resolveNodeSettings,
  type GivenSettings,
  type NodeSettings,
} from '../cni/node-settings';

/** Reads a small root-only regular file (no symlink, no FIFO, size-capped); undefined when absent; throws otherwise. */
export type ReadRootFile = (path: string, maxBytes: number) => string | undefined;

/** The settings in force, or the one line saying why the announcer must not start (the file's bad field). */
export function loadNodeSettings(
  stateDir: string,
  flags: GivenSettings,
  read: ReadRootFile,
): { ok: true; settings: NodeSettings } | { ok: false; problem: string } {
  const file = join(stateDir, NODE_SETTINGS_FILE);
  let text: string | undefined;
  try {
    text = read(file, NODE_SETTINGS_MAX_BYTES);
  } catch (err) {
    return { ok: false, problem: `cannot read ${file}: ${(err as Error).message}` };
  }
  if (text === undefined) return { ok: true, settings: resolveNodeSettings(flags, {}) };
  const parsed = parseNodeSettings(text, file);
  return parsed.ok ? { ok: true, settings: resolveNodeSettings(flags, parsed.settings) } : parsed;
}
