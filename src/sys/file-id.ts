// A file's identity, its device and inode: how the plugin tells that a path still leads to the file
// it looked at before (a netns, a caller's namespaces and root, the announcer's socket, an executable).
// Records keep it as `{ dev, ino }`.
import { statSync } from 'node:fs';
import { attempt } from './sys-error';

/** A file's device and inode (st_dev, st_ino). */
export interface FileId {
  dev: number;
  ino: number;
}

/** The identity in a stat result (`{ dev, ino }` alone, as records keep it). */
export function fileIdOf(st: FileId): FileId {
  return { dev: st.dev, ino: st.ino };
}

/** Whether `a` and `b` are one file; an identity that could not be had (undefined) matches only another such. */
export function sameFile(a: FileId | undefined, b: FileId | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.dev === b.dev && a.ino === b.ino;
}

/** The identity of the file `path` leads to (following symlinks, magic links included); throws as stat(2) does. */
export function fileId(path: string): FileId {
  return fileIdOf(statSync(path));
}

/** The identity of the file `path` leads to now, or undefined when there is none (or it cannot be looked at). */
export function fileIdAt(path: string): FileId | undefined {
  return attempt(() => fileId(path));
}
