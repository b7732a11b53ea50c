import { mkdirSync } from 'node:fs';
import { dirname } from '../path';

/**
 * mkdir -p with `mode` for the directories it creates. Node 20's recursive
 * mkdirSync loops forever when mkdir(2) keeps answering ENOENT under a parent
 * that exists (procfs, sysfs); this walk stops at the first real error.
 */
export function ensureDir(path: string, mode: number): void {
  try {
    mkdirSync(path, { mode });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    const parent = dirname(path);
    if (code !== 'ENOENT' || parent === path) throw err;
    ensureDir(parent, mode);
    try {
      mkdirSync(path, { mode });
    } catch (again) {
      if ((again as NodeJS.ErrnoException).code !== 'EEXIST') throw again;
    }
  }
}
