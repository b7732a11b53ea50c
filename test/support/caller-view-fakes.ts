// Views of the file system for tests that run in the test process's own: every path as it is.
import type { CallerView } from '../../src/sys/caller-view';

/** A view that leaves paths as they are. */
export const identityView: CallerView = {
  caller: { mnt: { dev: 0, ino: 0 }, net: { dev: 0, ino: 0 } },
  path: (p) => p,
};
